"""Operators and modules on an accelerator that is not there: device placement checked without a GPU.

PyTorch can register its spare backend (PrivateUse1) from Python with a dummy device guard
(``torch.utils.backend_registration._setup_privateuseone_for_python_backend``, experimental, as
pinned in constraints.txt), and ``FakeTensorMode`` runs every operation on tensors that carry a
device, a shape and a dtype but no data. Together they give a non-CPU device on which

* mixing devices raises for every operation, as on CUDA ("Expected all tensors to be on the same
  device ... fakegpu:0 and cpu"), including the index arguments that the meta device of
  test_no_host_sync.py does not check (``index_select`` with a host index fails on CUDA);
* reading a value raises (``DataDependentOutputException``);
* backward passes run too, so a gradient that meets a host tensor is caught.

Covered: every dense, linear and low-rank conformance operator with no mask, both causal alignments
and key padding, the banded sliding window, and FAVOR+ with its projection drawn in the fake mode,
forward and backward; the attention modules and blocks. Left out: BigBird and Longformer (their
patterns are built on the host from data, which a fake mode cannot do; their placement is tested in
test_no_host_sync.py and test_tables.py), masks on the sliding window (the conformance adapter
turns them into a graph, data dependent too), and the bottom-right causal alignment of the fused path
(torch's lower-right causal bias is a tensor subclass that a fake mode cannot wrap; the
meta-device test covers it).

This file runs in a process of its own (test_fake_accelerator.py starts it): registering a backend
cannot be undone, it makes PyTorch believe an accelerator exists (``torch.random.fork_rng`` then
asks the dummy backend for its random state and fails), and it must happen before the process's
first backward pass, since the autograd engine sizes its per-device queues when it starts.
"""

from __future__ import annotations

import pytest
import torch

from attnlab.nn import MultiHeadAttention
from attnlab.nn.block import BlockConfig, DecoderBlock, TransformerBlock
from conformance import OPERATORS

B, H, N_Q, N_K, D_K, D_V = 2, 3, 5, 7, 11, 13

if torch._C._get_privateuse1_backend_name() == "privateuseone":  # not yet registered in this process
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    _setup_privateuseone_for_python_backend("fakegpu")


@pytest.fixture(scope="module")
def fake():
    """(device name, one FakeTensorMode for the module: cached device tables must not mix modes)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    return torch._C._get_privateuse1_backend_name(), FakeTensorMode()


def _cases():
    for e in OPERATORS:
        if e.name == "sparse-window-gather":  # its layout is built from the sizes alone
            yield pytest.param(e, {}, id=f"{e.name}-plain")
            yield pytest.param(e, {"causal": "top_left"}, id=f"{e.name}-causal-top_left")
            yield pytest.param(e, {"causal": "bottom_right"}, id=f"{e.name}-causal-bottom_right")
            continue
        if e.name.startswith("sparse-") or e.name == "linear-favor+":  # tables drawn on the host
            continue
        yield pytest.param(e, {}, id=f"{e.name}-plain")
        if e.supports("causal"):
            yield pytest.param(e, {"causal": "top_left"}, id=f"{e.name}-causal-top_left")
            if e.name not in ("softmax-fused", "multihead"):
                yield pytest.param(e, {"causal": "bottom_right"}, id=f"{e.name}-causal-bottom_right")
        if e.supports("key_padding"):
            yield pytest.param(e, {"key_padding_mask": True}, id=f"{e.name}-key-padding")


def test_the_fake_device_catches_what_cuda_would(fake):
    name, mode = fake
    from torch._subclasses.fake_tensor import DataDependentOutputException

    with mode:
        x = torch.randn(4, 3, device=name)
        with pytest.raises(RuntimeError, match="same device|different devices"):
            x.index_select(0, torch.tensor([0, 1]))  # a host index for a device tensor
        with pytest.raises(RuntimeError, match="same device|different devices"):
            x @ torch.ones(3, 2)
        with pytest.raises(DataDependentOutputException):
            bool(x.sum() > 0)


@pytest.mark.parametrize("entry,masks", list(_cases()))
def test_operator_forward_and_backward_stay_on_the_device(fake, entry, masks):
    name, mode = fake
    n_q = N_K if masks.get("causal") == "top_left" else N_Q
    with mode:
        q, k, v = (torch.randn(*s, device=name, requires_grad=True)
                   for s in ((B, H, n_q, D_K), (B, H, N_K, D_K), (B, H, N_K, D_V)))
        kw = dict(masks)
        if kw.get("key_padding_mask"):
            kw["key_padding_mask"] = torch.zeros(B, N_K, dtype=torch.bool, device=name)
        out = entry.fn(q, k, v, **kw).output
        out.sum().backward()
        assert out.device.type == name and tuple(out.shape) == (B, H, n_q, D_V)
        assert all(t.grad is not None and t.grad.device.type == name for t in (q, k, v))


@pytest.mark.parametrize("causal", [False, "top_left"])
def test_favor_features_drawn_in_the_fake_mode_stay_on_the_device(fake, causal):
    """FAVOR+ with its projection drawn inside the fake mode (the conformance entry's is a real host
    tensor): W is placed on the inputs' device, forward and backward."""
    from attnlab.ops.linear.attention import linear_attention
    from attnlab.ops.linear.features import feature_map

    name, mode = fake
    with mode:
        fm = feature_map("favor+", d=D_K, num_features=16, generator=torch.Generator().manual_seed(0))
        q, k, v = (torch.randn(*s, device=name, requires_grad=True)
                   for s in ((B, H, N_K, D_K), (B, H, N_K, D_K), (B, H, N_K, D_V)))
        out = linear_attention(q, k, v, feature_map=fm, causal=causal).output
        out.sum().backward()
        assert out.device.type == name and all(t.grad.device.type == name for t in (q, k, v))


@pytest.mark.parametrize("kind", ["mha", "block-post", "block-pre", "decoder-block"])
def test_module_forward_and_backward_stay_on_the_device(fake, kind):
    name, mode = fake
    d = 24
    with mode, torch.device(name):  # parameters made on the device (a fake mode cannot move real ones)
        module = {"mha": lambda: MultiHeadAttention(d, 4),
                  "block-post": lambda: TransformerBlock(d, 4, 32),
                  "block-pre": lambda: TransformerBlock(d, 4, 32, BlockConfig(norm="standard", norm_position="pre")),
                  "decoder-block": lambda: DecoderBlock(d, 4, 32)}[kind]()
        x = torch.randn(B, N_K, d, requires_grad=True)
        kpm = torch.zeros(B, N_K, dtype=torch.bool)
        if kind == "decoder-block":
            out = module(x, x, tgt_key_padding_mask=kpm, memory_key_padding_mask=kpm).output
        else:
            out = module(x, causal=True, key_padding_mask=kpm).output
        out.sum().backward()
        assert out.device.type == name and x.grad.device.type == name
        assert all(p.grad is not None and p.grad.device.type == name for p in module.parameters())
