"""The attention variants ``attnlab bench`` times, each a closure over q, k, v.

A variant's ``build(q, k, v, ctx)`` prepares everything that is not part of one
forward pass (graphs, projections, random features, compiled functions) and
returns ``fn`` with ``fn() -> Tensor`` the forward output; q, k, v are
(B, H, n, d_head). The operators of the sparse, linear and low-rank families are
imported inside the builders, so a missing one is reported as unavailable
(:class:`Unavailable`) rather than breaking the benchmark; a configuration that
cannot run at this n (memory) raises :class:`Skipped`.

Every variant is compared with the fused SDPA call that computes the same thing
(``reference``): plain SDPA, ``is_causal=True``, or SDPA with a (B, 1, 1, n) key-padding mask.
The masked exact paths (``softmax-causal``, ``softmax-padding``, ``softmax-causal-padding``)
pad the last n/PADDING_DIVISOR keys of every sequence; causal with padding has no single
fused call, so it is compared with causal SDPA, the cheaper of the two.
Parameters (fixed so that runs compare): sliding window w = 256 (i - w/2 <= j <= i + w/2),
BigBird w = 256 and r = 64 random keys, Longformer w = 256 with per-head dilations
1,1,2,2,4,4,8,8, linear attention chunk C = 64, FAVOR+ m = 256 features, Linformer k' = 256.

Global tokens are left out of the BigBird and Longformer graphs: a global query lists
every key, so the padded neighbour lists of ``graph_attention`` become n wide and its
gather O(n^2 d) (at n = 1024, 8 heads, d = 64 already 4 GiB). Their O(n) cost needs
the g global rows computed apart from the windowed ones. ``_graph`` skips any graph
whose gather would pass GATHER_LIMIT_BYTES.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from attnlab.bench.flops import (
    Shape,
    causal_softmax_flops,
    chunked_causal_linear_flops,
    favor_flops,
    full_softmax_flops,
    linear_flops,
    linformer_flops,
    sparse_flops,
    window_pairs,
)
from attnlab.errors import UnknownNameError

WINDOW = 256
BIGBIRD = {"g": 0, "w": 256, "r": 64}
LONGFORMER_W, LONGFORMER_DILATIONS = 256, (1, 1, 2, 2, 4, 4, 8, 8)
CHUNK = 64
FAVOR_FEATURES = 256
LINFORMER_K = 256
GATHER_LIMIT_BYTES = 4 * 2**30  # graph variants above this gather size are skipped
PADDING_DIVISOR = 8  # the masked variants pad the last n / 8 keys of every sequence


class Unavailable(Exception):
    """The operator behind a variant is not importable (or lacks the option) here."""


class Skipped(Exception):
    """The variant cannot run at this size (the message says why)."""


@dataclass
class BuildContext:
    """What builders may need: the seed for random graphs/projections/features, and a
    per-variant, per-shape record of the FLOPs when they depend on a built object."""

    seed: int = 0
    pairs: int | None = None  # |E| of a graph variant, set by its builder


@dataclass(frozen=True)
class Variant:
    """name; description; causal: compared with causal SDPA; order: "quadratic" or "linear"
    in n (time); explicit: materialises an n x n matrix (skipped above max_explicit_n);
    build(q, k, v, ctx) -> fn; flops(shape, ctx) -> forward FLOPs; compare_with: the
    reference variant when it is not SDPA of the same causality; masked: an exact softmax
    path with a causal or padding mask (held to the masked-exact targets)."""

    name: str
    description: str
    causal: bool
    order: str
    explicit: bool
    build: Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]
    flops: Callable[[Shape, BuildContext], float]
    compare_with: str | None = None
    masked: bool = False

    @property
    def reference(self) -> str:
        return self.compare_with or ("sdpa-causal" if self.causal else "sdpa")


def _shape(q: Tensor) -> Shape:
    B, H, n, d = q.shape
    return Shape(B, H, n, d)


def _import(what: str, module: str, name: str):
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise Unavailable(f"{what}: {module}.{name} is not available ({type(e).__name__})") from None


# ----------------------------------------------------------------------------- builders
def _sdpa(causal: bool):
    def build(q, k, v, ctx):
        import torch.nn.functional as F

        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return build


def _sdpa_backend(backend: str):
    """SDPA restricted to one of PyTorch's backends (FLASH_ATTENTION, EFFICIENT_ATTENTION, MATH);
    unavailable where that backend cannot take these inputs (the efficient kernel on the CPU)."""

    def build(q, k, v, ctx):
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        chosen = getattr(SDPBackend, backend)

        def fn():
            with sdpa_kernel([chosen]):
                return F.scaled_dot_product_attention(q, k, v)

        try:
            fn()
        except RuntimeError as e:
            raise Unavailable(f"SDPA backend {backend} does not run here: {' '.join(str(e).split())[:160]}") from None
        return fn

    return build


def padding_mask(q: Tensor) -> Tensor:
    """(B, n) bool, True = padding: the last n // PADDING_DIVISOR keys of every sequence."""
    B, n = q.shape[0], q.shape[-2]
    pad = torch.zeros(B, n, dtype=torch.bool, device=q.device)
    pad[:, n - n // PADDING_DIVISOR:] = True
    return pad


def _sdpa_padding(q, k, v, ctx):
    import torch.nn.functional as F

    keep = ~padding_mask(q)[:, None, None, :]  # (B, 1, 1, n): broadcast by the kernel
    return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


def _flex_full(q, k, v, ctx):
    flex = _import("FlexAttention", "torch.nn.attention.flex_attention", "flex_attention")
    if q.dtype == torch.float64:
        raise Skipped("compiled FlexAttention rejects float64")
    compiled = torch.compile(flex, dynamic=False)
    return lambda: compiled(q, k, v)


def _softmax(explicit: bool):
    def build(q, k, v, ctx):
        from attnlab.ops.softmax import softmax_attention

        return lambda: softmax_attention(q, k, v, return_weights=explicit).output

    return build


def _softmax_masked(causal: bool, padding: bool):
    def build(q, k, v, ctx):
        from attnlab.ops.softmax import softmax_attention

        pad = padding_mask(q) if padding else None
        return lambda: softmax_attention(q, k, v, causal=causal, key_padding_mask=pad).output

    return build


def _unnormalized(q, k, v, ctx):
    from attnlab.ops.unnormalized import unnormalized_attention

    return lambda: unnormalized_attention(q, k, v).output


def _window(backend: str):
    def build(q, k, v, ctx):
        attend = _import("sliding window", "attnlab.ops.sparse", "sliding_window_attention")
        return lambda: attend(q, k, v, WINDOW, backend=backend).output

    return build


def _graph(make_graph: Callable[[int], Tensor]):
    def build(q, k, v, ctx):
        attend = _import("graph attention", "attnlab.ops.sparse", "graph_attention")
        neighbors = make_graph(q.shape[-2])
        B, H, n, d = q.shape
        gather = 2 * B * H * n * neighbors.shape[-1] * (d + 1) * q.element_size()  # K_N, V_N, logits, P
        if gather > GATHER_LIMIT_BYTES:
            raise Skipped(f"gathering K and V over neighbour lists {neighbors.shape[-1]} wide needs "
                          f"{gather / 2**30:.1f} GiB > {GATHER_LIMIT_BYTES / 2**30:.0f} GiB")
        ctx.pairs = int((neighbors >= 0).sum()) // (H if neighbors.ndim == 3 else 1)  # per head
        return lambda: attend(q, k, v, neighbors).output

    return build


def _bigbird_graph(n: int) -> Tensor:
    g = _import("BigBird", "attnlab.ops.sparse", "bigbird_graph")
    return g(n, **BIGBIRD, seed=0)


def _longformer_graph(n: int) -> Tensor:
    g = _import("Longformer", "attnlab.ops.sparse", "longformer_graph")
    return g(n, w=LONGFORMER_W, dilation=list(LONGFORMER_DILATIONS))


def _linear(feature_map: str, causal: bool):
    def build(q, k, v, ctx):
        attend = _import("linear attention", "attnlab.ops.linear", "linear_attention")
        fmap = feature_map
        if feature_map == "favor+":  # the random features are drawn once, like fixed weights
            make = _import("FAVOR+", "attnlab.ops.linear", "feature_map")
            fmap = make("favor+", d=q.shape[-1], num_features=FAVOR_FEATURES,
                        generator=torch.Generator().manual_seed(ctx.seed))
        return lambda: attend(q, k, v, feature_map=fmap, causal=causal, chunk_size=CHUNK).output

    return build


def _linformer(q, k, v, ctx):
    attend = _import("Linformer", "attnlab.ops.lowrank", "linformer_attention")
    n = q.shape[-2]
    if LINFORMER_K > n:
        raise Skipped(f"k'={LINFORMER_K} > n={n}")
    g = torch.Generator().manual_seed(ctx.seed)
    # E, F: (H, k', n) with N(0, 1/k') entries (eq. 17; Theorem 2.3 of the rank-collapse notes)
    E = torch.randn(q.shape[1], LINFORMER_K, n, generator=g).div_(LINFORMER_K**0.5).to(q.device, q.dtype)
    F = torch.randn(q.shape[1], LINFORMER_K, n, generator=g).div_(LINFORMER_K**0.5).to(q.device, q.dtype)
    return lambda: attend(q, k, v, E, F).output


# ----------------------------------------------------------------------------- the list
def _full(s, ctx):
    return full_softmax_flops(s)


def _causal(s, ctx):
    return causal_softmax_flops(s)


def _pairs(s, ctx):
    return sparse_flops(s, ctx.pairs) if ctx.pairs is not None else float("nan")


_V = [
    Variant("sdpa", "fused F.scaled_dot_product_attention", False, "quadratic", False, _sdpa(False), _full),
    Variant("sdpa-causal", "fused SDPA, is_causal=True", True, "quadratic", False, _sdpa(True), _causal),
    Variant("sdpa-flash", "fused SDPA, flash backend only", False, "quadratic", False,
            _sdpa_backend("FLASH_ATTENTION"), _full),
    Variant("sdpa-efficient", "fused SDPA, memory-efficient backend only", False, "quadratic", False,
            _sdpa_backend("EFFICIENT_ATTENTION"), _full),
    Variant("sdpa-math", "SDPA, math backend only (materialises n x n)", False, "quadratic", True,
            _sdpa_backend("MATH"), _full),
    Variant("flex", "FlexAttention, full, torch.compile", False, "quadratic", False, _flex_full, _full),
    Variant("softmax", "attnlab softmax_attention (the exact softmax path)", False, "quadratic", False,
            _softmax(False), _full),
    Variant("softmax-explicit", "attnlab softmax_attention, return_weights=True", False, "quadratic", True,
            _softmax(True), _full),
    Variant("sdpa-padding", f"fused SDPA, key padding as a (B, 1, 1, n) mask (last n/{PADDING_DIVISOR} keys)",
            False, "quadratic", False, _sdpa_padding, _full),
    Variant("softmax-causal", "attnlab softmax_attention, causal=True", True, "quadratic", False,
            _softmax_masked(True, False), _causal, masked=True),
    Variant("softmax-padding", f"attnlab softmax_attention, key_padding_mask (last n/{PADDING_DIVISOR} keys)",
            False, "quadratic", False, _softmax_masked(False, True), _full, compare_with="sdpa-padding",
            masked=True),
    Variant("softmax-causal-padding", "attnlab softmax_attention, causal=True and key_padding_mask", True,
            "quadratic", False, _softmax_masked(True, True), _causal, masked=True),
    Variant("window-gather", f"sliding window w={WINDOW}, gather backend", False, "linear", False,
            _window("gather"), lambda s, ctx: sparse_flops(s, window_pairs(s.n, WINDOW))),
    Variant("window-flex", f"sliding window w={WINDOW}, FlexAttention backend", False, "linear", False,
            _window("flex"), lambda s, ctx: sparse_flops(s, window_pairs(s.n, WINDOW))),
    Variant("bigbird", "BigBird w={w}, r={r}, no global tokens: graph_attention".format(**BIGBIRD), False,
            "linear", False,
            _graph(_bigbird_graph), _pairs),
    Variant("longformer", f"Longformer w={LONGFORMER_W}, dilations per head {','.join(map(str, LONGFORMER_DILATIONS))}, "
            "no global tokens: graph_attention", False, "linear", False,
            _graph(_longformer_graph), _pairs),
    Variant("linear", "linear attention, elu+1", False, "linear", False, _linear("elu+1", False),
            lambda s, ctx: linear_flops(s, s.d)),
    Variant("linear-causal", f"linear attention, elu+1, causal chunked C={CHUNK}", True, "linear", False,
            _linear("elu+1", True), lambda s, ctx: chunked_causal_linear_flops(s, s.d, CHUNK)),
    Variant("favor+", f"FAVOR+ with m={FAVOR_FEATURES} features", False, "linear", False, _linear("favor+", False),
            lambda s, ctx: favor_flops(s, FAVOR_FEATURES)),
    Variant("linformer", f"Linformer k'={LINFORMER_K}", False, "linear", False, _linformer,
            lambda s, ctx: linformer_flops(s, LINFORMER_K)),
    Variant("unnormalized", "unnormalized (Q K^T) V, explicit", False, "quadratic", True, _unnormalized, _full),
]
VARIANTS: dict[str, Variant] = {v.name: v for v in _V}


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise UnknownNameError(f"unknown variant {name!r}: choose from {', '.join(VARIANTS)}")
    return VARIANTS[name]
