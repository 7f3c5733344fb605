"""Forward passes that never wait for the device.

On CUDA a forward pass is queued, not run: the host launches kernels and moves on. Reading
a device value into Python (``.item()``, ``bool(t)``, ``int(t)``, a data-dependent shape)
makes the host wait for the whole queue, once per call, and breaks CUDA-graph capture and
``torch.compile(fullgraph=True)``.

The check needs no GPU: on PyTorch's ``meta`` device a tensor has a shape and a dtype but no
values, so every such read raises ("Tensor.item() cannot be called on meta tensors"), and an
elementwise operation that meets a CPU tensor raises as it would on CUDA ("Tensor on device
meta is not on the expected device cpu"). An operator that runs on meta inputs and returns a
meta output of the right shape reads no value and creates no stray host tensor on that path.

What this does not see: a copy of a host-built table to the device (the sparse layouts and
the FAVOR+ projection are built on the CPU, cached, and copied per call), which CUDA runs as
a synchronous copy from pageable memory; ``torch.cuda.set_sync_debug_mode("error")`` on a GPU
flags those.

Covered: every conformance operator with no mask, causal in both alignments, and a key-padding
mask (where supported), and the nn modules on those masks. Not covered, by design: dense
user masks (``mask=``: their values are validated, an O(n^2) path anyway), sparse operators
whose pattern is derived from a mask tensor (the graph's size depends on the mask's values),
and ``return_weights`` (explicit n_q x n_k paths).
"""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attnlab.nn import MultiHeadAttention
from attnlab.nn.block import BlockConfig, DecoderBlock, TransformerBlock
from attnlab.nn.linformer import LinformerSelfAttention
from attnlab.nn.transformer import Encoder
from attnlab.ops.sparse import bigbird_attention, longformer_attention, sliding_window_attention
from conformance import OPERATORS, OperatorEntry
from tolerances import FLOAT64

B, H, N_Q, N_K, D_K, D_V = 2, 3, 5, 7, 11, 13
# The conformance adapters of these operators turn a key-padding mask into a sparse graph,
# whose size is data dependent (tests/ops/conformance_sparse.py).
GRAPH_FROM_MASK = {"sparse-bigbird", "sparse-longformer", "sparse-bigbird-pattern",
                   "sparse-longformer-pattern", "sparse-window-gather"}


def _cases():
    for e in OPERATORS:
        yield pytest.param(e, {}, id=f"{e.name}-plain")
        if e.supports("causal"):
            for a in ("top_left", "bottom_right"):
                yield pytest.param(e, {"causal": a}, id=f"{e.name}-causal-{a}")
        if e.supports("key_padding") and e.name not in GRAPH_FROM_MASK:
            yield pytest.param(e, {"key_padding_mask": True}, id=f"{e.name}-key-padding")
            if e.supports("causal"):
                yield pytest.param(e, {"key_padding_mask": True, "causal": "bottom_right"},
                                   id=f"{e.name}-key-padding-causal")


def _run_operator(entry: OperatorEntry, masks: dict):
    """entry on meta inputs made on the device directly (no host copy); (result, expected shape)."""
    n_q = N_K if masks.get("causal") == "top_left" else N_Q  # top-left pairs square inputs here
    q, k, v = (torch.empty(*s, device="meta") for s in ((B, H, n_q, D_K), (B, H, N_K, D_K), (B, H, N_K, D_V)))
    kw = dict(masks)
    if kw.get("key_padding_mask"):
        kw["key_padding_mask"] = torch.zeros(B, N_K, dtype=torch.bool, device="meta")
    return entry.fn(q, k, v, **kw), (B, H, n_q, D_V)


@pytest.mark.parametrize("entry,masks", list(_cases()))
def test_operator_forward_reads_no_device_value(entry, masks):
    out, shape = _run_operator(entry, masks)
    assert out.output.device.type == "meta" and tuple(out.output.shape) == shape


def test_a_value_read_is_what_the_meta_check_catches():
    """The premise of this file: a host read of a meta tensor raises, and so does mixing in a CPU tensor."""
    x = torch.randn(3, device="meta")
    with pytest.raises(RuntimeError, match="meta"):
        bool(x.any())
    with pytest.raises(RuntimeError, match="device"):
        x + torch.ones(3)


def test_linear_attention_diagnostics_wait_until_read():
    """The diagnostics are 0-d device tensors until read; reading them gives the same numbers."""
    from attnlab.ops.linear.attention import linear_attention

    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=g, dtype=torch.float64) for _ in range(3))
    meta = linear_attention(*(t.to("meta") for t in (q, k, v)), causal="top_left")
    assert set(meta.diagnostics.pending()) == {"min_denominator", "eps_hits", "feature_underflow"}
    with pytest.raises(RuntimeError, match="meta"):
        meta.diagnostics["eps_hits"]  # reading is where the device is waited for
    res = linear_attention(q, k, v, causal="top_left")
    D = (torch.nn.functional.elu(q) + 1) @ (torch.nn.functional.elu(k) + 1).cumsum(-2).transpose(-2, -1)
    D = torch.diagonal(D, dim1=-2, dim2=-1)  # D_i = phi(q_i) . sum_{j <= i} phi(k_j), (2, 4, 6)
    assert res.diagnostics["min_denominator"] == pytest.approx(D.min().item(), rel=FLOAT64)
    assert res.diagnostics.to_dict() == {"min_denominator": res.diagnostics["min_denominator"],
                                         "eps_hits": 0, "feature_underflow": 0.0}
    assert isinstance(res.diagnostics["eps_hits"], int) and res.diagnostics.pending() == ()


def _module_cases():
    """(id, module factory, how it is called, masks): every mask the module takes."""
    d, heads = 24, 4
    factories = [
        ("mha-softmax", lambda: MultiHeadAttention(d, heads), "attention"),
        ("mha-unnormalized", lambda: MultiHeadAttention(d, heads, attention="unnormalized"), "attention"),
        ("block-post", lambda: TransformerBlock(d, heads, 32), "attention"),
        ("block-pre", lambda: TransformerBlock(d, heads, 32, BlockConfig(norm="standard", norm_position="pre")), "attention"),
        ("encoder", lambda: Encoder(50, d, heads, 32, 2), "encode"),
        ("decoder-block", lambda: DecoderBlock(d, heads, 32), "decoder"),  # always causal
        ("linformer", lambda: LinformerSelfAttention(d, heads, N_K, 4), "plain"),  # takes no masks
    ]
    for name, make, how in factories:
        masks = [{}] + ([{"causal": True}] if how in ("attention", "encode") else []) \
            + ([{"key_padding_mask": True}] if how != "plain" else [])
        for m in masks:
            yield pytest.param(make, how, m, id=f"{name}-{'-'.join(m) or 'plain'}")


@pytest.mark.parametrize("make,how,masks", list(_module_cases()))
def test_module_forward_reads_no_device_value(make, how, masks):
    module = make().to("meta")
    x = torch.empty(B, N_K, 24, device="meta")
    kpm = torch.zeros(B, N_K, dtype=torch.bool, device="meta") if masks.get("key_padding_mask") else None
    if how == "plain":
        out = module(x).output
    elif how == "encode":
        module.causal = bool(masks.get("causal"))
        out = module.encode(x, kpm).output
    elif how == "decoder":
        out = module(x, x, tgt_key_padding_mask=kpm, memory_key_padding_mask=kpm).output
    else:
        out = module(x, causal=masks.get("causal"), key_padding_mask=kpm).output
    assert out.device.type == "meta" and tuple(out.shape) == (B, N_K, 24)


# --- no host-to-device copy per call ---------------------------------------------------------

class _HostCopies(TorchDispatchMode):
    """Records every operation that takes a CPU tensor and returns a tensor on another device."""

    def __init__(self):
        super().__init__()
        self.copies: list[tuple[str, tuple[int, ...]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        host = [a for a in args if isinstance(a, torch.Tensor) and a.device.type == "cpu"]
        if host and isinstance(out, torch.Tensor) and out.device.type != "cpu":
            self.copies.extend((str(func), tuple(a.shape)) for a in host)
        return out


# Left out: torch's lower-right causal bias is a tensor subclass that a dispatch mode cannot
# wrap; the adapters of the graph entries and of Linformer hand the operator host tensors
# they build per call (a graph, E and F), which the operators take as given.
_COPY_EXEMPT = {"sparse-bigbird", "sparse-longformer", "linformer-fixed"}


def _copy_cases():
    for p in _cases():
        entry, masks = p.values
        if entry.name in _COPY_EXEMPT:
            continue
        if masks.get("causal") == "bottom_right" and entry.name in ("softmax-fused", "multihead"):
            continue
        if entry.name.endswith("-pattern") and masks != {"causal": "top_left"}:
            continue  # only square, unmasked inputs reach the pattern path itself (conformance_sparse.py)
        yield p


@pytest.mark.parametrize("entry,masks", list(_copy_cases()))
def test_a_repeated_forward_copies_nothing_from_the_host(entry, masks):
    """Host-built tables (window layouts, pattern tables, the FAVOR+ projection) are placed on the
    device once; a second call with the same sizes copies nothing (on CUDA each such copy from
    pageable memory is a synchronous transfer)."""
    _run_operator(entry, masks)  # the first call may build and place tables
    with _HostCopies() as mode:
        out, shape = _run_operator(entry, masks)
    assert mode.copies == [] and tuple(out.output.shape) == shape


@pytest.mark.parametrize("name,call", [
    ("longformer, one dilation per head", lambda q: longformer_attention(q, q, q, w=4, dilation=(1, 2, 1),
                                                                         global_tokens=(0, 5))),
    ("bigbird", lambda q: bigbird_attention(q, q, q, g=2, w=3, r=2, seed=4, causal=True)),
    ("window, dilation 2", lambda q: sliding_window_attention(q, q, q, 5, dilation=2)),
], ids=lambda x: x if isinstance(x, str) else "")
def test_structured_sparse_forward_places_its_tables_once(name, call):
    q = torch.empty(2, 3, 24, 8, device="meta")
    call(q)
    with _HostCopies() as mode:
        out = call(q)
    assert mode.copies == [] and out.output.device.type == "meta" and out.output.shape == (2, 3, 24, 8)


def test_per_head_window_tables_live_on_the_inputs_device():
    """The head indices and their inverse permutation index device tensors (a CUDA tensor cannot
    be indexed by a CPU index in index_select), so they are placed with the bands."""
    from attnlab.ops.sparse.structured import _placed_bands

    groups, order = _placed_bands(24, 2, (1, 2, 1), False, 16, torch.device("meta"))
    tables = [order] + [t for h, band in groups for t in (h, band.allowed, band.keys)]
    assert len(groups) == 2 and all(t.device.type == "meta" for t in tables)
