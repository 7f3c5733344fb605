"""The attention variants ``attnlab bench`` times, each a closure over q, k, v.

A variant's ``build(q, k, v, ctx)`` prepares everything that is not part of one
forward pass (graphs, projections, random features, compiled functions) and
returns ``fn`` with ``fn() -> Tensor`` the forward output; q, k, v are
(B, H, n, d_head). A configuration that cannot run here (a backend, a compiler) is
reported as unavailable (:class:`Unavailable`) and one that cannot run at this n
(memory) raises :class:`Skipped`.

The attnlab variants come from the catalogue (:data:`attnlab.ops.catalogue.CATALOGUE`): each
timed configuration names its entry (``variant``), whose operator it calls and whose FLOP model
it reports, with the parameters fixed below; the causal and key-padding configurations of
softmax, the two window backends and causal linear attention are configurations of one entry
each. The fused SDPA and FlexAttention references are the benchmark's own. An entry that is
not timed is in :data:`UNTIMED`, with the reason.

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
from typing import Any, Callable

import torch
from torch import Tensor

from attnlab.errors import UnknownNameError
from attnlab.ops.catalogue import CATALOGUE
from attnlab.ops.flops import Shape, causal_softmax_flops, full_softmax_flops

WINDOW = 256
BIGBIRD = {"g": 0, "w": 256, "r": 64}
LONGFORMER_W, LONGFORMER_DILATIONS = 256, (1, 1, 2, 2, 4, 4, 8, 8)
CHUNK = 64
FAVOR_FEATURES = 256
LINFORMER_K = 256
GATHER_LIMIT_BYTES = 4 * 2**30  # graph variants above this gather size are skipped
PADDING_DIVISOR = 8  # the masked variants pad the last n / 8 keys of every sequence

UNTIMED = {
    "linear-relu": "the kernels and FLOPs of linear (r = d features, another elementwise map): timed as linear",
    "linear-taylor": "the kernels of linear with r = d + 1 features: timed as linear",
}
"""Catalogue entries the benchmark does not time, with the reason."""


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
    path with a causal or padding mask (held to the masked-exact targets); variant: the
    catalogue entry it times (None for the SDPA and FlexAttention references)."""

    name: str
    description: str
    causal: bool
    order: str
    explicit: bool
    build: Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]
    flops: Callable[[Shape, BuildContext], float]
    compare_with: str | None = None
    masked: bool = False
    variant: str | None = None

    @property
    def reference(self) -> str:
        return self.compare_with or ("sdpa-causal" if self.causal else "sdpa")


def _shape(q: Tensor) -> Shape:
    B, H, n, d = q.shape
    return Shape(B, H, n, d)


def _import(what: str, module: str, name: str) -> Any:
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise Unavailable(f"{what}: {module}.{name} is not available ({type(e).__name__})") from None


# ----------------------------------------------------------------------------- builders
def _sdpa(causal: bool) -> Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]:
    def build(q, k, v, ctx):
        import torch.nn.functional as F

        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return build


def _sdpa_backend(backend: str) -> Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]:
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


def _sdpa_padding(q: Tensor, k: Tensor, v: Tensor, ctx: BuildContext) -> Callable[[], Tensor]:
    import torch.nn.functional as F

    keep = ~padding_mask(q)[:, None, None, :]  # (B, 1, 1, n): broadcast by the kernel
    return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


def _flex_full(q: Tensor, k: Tensor, v: Tensor, ctx: BuildContext) -> Callable[[], Tensor]:
    flex = _import("FlexAttention", "torch.nn.attention.flex_attention", "flex_attention")
    if q.dtype == torch.float64:
        raise Skipped("compiled FlexAttention rejects float64")
    compiled = torch.compile(flex, dynamic=False)
    return lambda: compiled(q, k, v)


def _softmax(explicit: bool) -> Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]:
    def build(q, k, v, ctx):
        softmax = CATALOGUE["softmax"]
        return lambda: softmax(q, k, v, return_weights=explicit).output

    return build


def _softmax_masked(causal: bool, padding: bool) -> Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]:
    def build(q, k, v, ctx):
        softmax = CATALOGUE["softmax"]
        pad = padding_mask(q) if padding else None
        return lambda: softmax(q, k, v, causal=causal, key_padding_mask=pad).output

    return build


def _unnormalized(q: Tensor, k: Tensor, v: Tensor, ctx: BuildContext) -> Callable[[], Tensor]:
    unnormalized = CATALOGUE["unnormalized"]
    return lambda: unnormalized(q, k, v).output


def _window(backend: str) -> Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]:
    def build(q, k, v, ctx):
        window = CATALOGUE["window"]
        return lambda: window(q, k, v, WINDOW, backend=backend).output

    return build


def _graph(name: str, make_graph: Callable[[int], Tensor]) -> Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]:
    def build(q, k, v, ctx):
        attend = CATALOGUE[name]
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
    return CATALOGUE["bigbird"].graph(n, **BIGBIRD, seed=0)


def _longformer_graph(n: int) -> Tensor:
    return CATALOGUE["longformer"].graph(n, w=LONGFORMER_W, dilation=list(LONGFORMER_DILATIONS))


def _linear(name: str, causal: bool) -> Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]]:
    def build(q, k, v, ctx):
        attend = CATALOGUE[name]
        extra = {}
        if name == "favor+":  # the random features are drawn once, like fixed weights
            from attnlab.ops.linear import feature_map

            extra["feature_map"] = feature_map("favor+", d=q.shape[-1], num_features=FAVOR_FEATURES,
                                               generator=torch.Generator().manual_seed(ctx.seed))
        return lambda: attend(q, k, v, causal=causal, chunk_size=CHUNK, **extra).output

    return build


def _linformer(q: Tensor, k: Tensor, v: Tensor, ctx: BuildContext) -> Callable[[], Tensor]:
    attend = CATALOGUE["linformer"]
    n = q.shape[-2]
    if LINFORMER_K > n:
        raise Skipped(f"k'={LINFORMER_K} > n={n}")
    g = torch.Generator().manual_seed(ctx.seed)
    # E, F: (H, k', n) with N(0, 1/k') entries (eq. 17; Theorem 2.3 of the rank-collapse notes)
    E = torch.randn(q.shape[1], LINFORMER_K, n, generator=g).div_(LINFORMER_K**0.5).to(q.device, q.dtype)
    F = torch.randn(q.shape[1], LINFORMER_K, n, generator=g).div_(LINFORMER_K**0.5).to(q.device, q.dtype)
    return lambda: attend(q, k, v, E, F).output


# ----------------------------------------------------------------------------- the list
def _full(s: Shape, ctx: BuildContext) -> float:
    return full_softmax_flops(s)


def _causal(s: Shape, ctx: BuildContext) -> float:
    return causal_softmax_flops(s)


def _timed(name: str, variant: str, description: str, build: Callable[[Tensor, Tensor, Tensor, BuildContext], Callable[[], Tensor]], *, causal: bool = False, explicit: bool | None = None,
           compare_with: str | None = None, masked: bool = False, **flop_params: Any) -> Variant:
    """A timed configuration of catalogue entry ``variant``: its order, its materialisation (unless
    ``explicit`` says otherwise) and its FLOP model at ``flop_params`` (a graph's pairs from the build)."""
    entry = CATALOGUE[variant]
    if causal:
        flop_params["causal"] = True
    if entry.graph is not None and "w" not in flop_params:
        def flops(s, ctx):
            return entry.flops(s, pairs=ctx.pairs) if ctx.pairs is not None else float("nan")
    else:
        def flops(s, ctx):
            return entry.flops(s, **flop_params)
    return Variant(name, description, causal, entry.order, entry.explicit if explicit is None else explicit, build,
                   flops, compare_with=compare_with, masked=masked, variant=variant)


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
    _timed("softmax", "softmax", "attnlab softmax_attention (the exact softmax path)", _softmax(False)),
    _timed("softmax-explicit", "softmax", "attnlab softmax_attention, return_weights=True", _softmax(True),
           explicit=True),
    Variant("sdpa-padding", f"fused SDPA, key padding as a (B, 1, 1, n) mask (last n/{PADDING_DIVISOR} keys)",
            False, "quadratic", False, _sdpa_padding, _full),
    _timed("softmax-causal", "softmax", "attnlab softmax_attention, causal=True", _softmax_masked(True, False),
           causal=True, masked=True),
    _timed("softmax-padding", "softmax", f"attnlab softmax_attention, key_padding_mask (last n/{PADDING_DIVISOR} keys)",
           _softmax_masked(False, True), compare_with="sdpa-padding", masked=True),
    _timed("softmax-causal-padding", "softmax", "attnlab softmax_attention, causal=True and key_padding_mask",
           _softmax_masked(True, True), causal=True, masked=True),
    _timed("window-gather", "window", f"sliding window w={WINDOW}, gather backend", _window("gather"), w=WINDOW),
    _timed("window-flex", "window", f"sliding window w={WINDOW}, FlexAttention backend", _window("flex"), w=WINDOW),
    _timed("bigbird", "bigbird", "BigBird w={w}, r={r}, no global tokens: graph_attention".format(**BIGBIRD),
           _graph("bigbird", _bigbird_graph)),
    _timed("longformer", "longformer", f"Longformer w={LONGFORMER_W}, dilations per head "
           f"{','.join(map(str, LONGFORMER_DILATIONS))}, no global tokens: graph_attention",
           _graph("longformer", _longformer_graph)),
    _timed("linear", "linear", "linear attention, elu+1", _linear("linear", False)),
    _timed("linear-causal", "linear", f"linear attention, elu+1, causal chunked C={CHUNK}", _linear("linear", True),
           causal=True, chunk_size=CHUNK),
    _timed("favor+", "favor+", f"FAVOR+ with m={FAVOR_FEATURES} features", _linear("favor+", False), m=FAVOR_FEATURES),
    _timed("linformer", "linformer", f"Linformer k'={LINFORMER_K}", _linformer, k_proj=LINFORMER_K),
    _timed("unnormalized", "unnormalized", "unnormalized (Q K^T) V, explicit", _unnormalized),
]
VARIANTS: dict[str, Variant] = {v.name: v for v in _V}


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise UnknownNameError(f"unknown variant {name!r}: choose from {', '.join(VARIANTS)}")
    return VARIANTS[name]
