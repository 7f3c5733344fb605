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

from attnlab.nn import MultiHeadAttention
from attnlab.nn.block import DecoderBlock, TransformerBlock
from attnlab.nn.linformer import LinformerSelfAttention
from attnlab.nn.transformer import Encoder
from conformance import OPERATORS, OperatorEntry

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


def _run_operator(entry: OperatorEntry, masks: dict, device: str, dtype=torch.float32):
    n_q = N_K if masks.get("causal") == "top_left" else N_Q  # top-left pairs square inputs here
    g = torch.Generator().manual_seed(3)

    def make(*shape):
        return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)

    q, k, v = make(B, H, n_q, D_K), make(B, H, N_K, D_K), make(B, H, N_K, D_V)
    kw = dict(masks)
    if kw.get("key_padding_mask"):
        kpm = torch.zeros(B, N_K, dtype=torch.bool)
        kpm[1, -2:] = True  # the last two keys of sequence 1 are padding
        kw["key_padding_mask"] = kpm.to(device)
    return entry.fn(q, k, v, **kw), (B, H, n_q, D_V)


@pytest.mark.parametrize("entry,masks", list(_cases()))
def test_operator_forward_reads_no_device_value(entry, masks):
    out, shape = _run_operator(entry, masks, "meta")
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
    assert res.diagnostics["min_denominator"] == pytest.approx(D.min().item(), rel=1e-12)
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
        ("block-pre", lambda: TransformerBlock(d, heads, 32, norm="standard", norm_position="pre"), "attention"),
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
        out = module.encode(x, kpm)
    elif how == "decoder":
        out = module(x, x, tgt_key_padding_mask=kpm, memory_key_padding_mask=kpm)
    else:
        res = module(x, causal=masks.get("causal"), key_padding_mask=kpm)
        out = res.output if hasattr(res, "output") else res
    assert out.device.type == "meta" and tuple(out.shape) == (B, N_K, 24)
