"""Every operator on every device this machine has (CPU always; CUDA where present).

The list of devices is what the machine offers, so nothing is skipped: on a
CPU-only machine this runs the CPU cases, on a GPU machine both.
"""

import pytest
import torch

from conformance import OPERATORS, OperatorEntry
from tolerances import assert_close


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("entry", OPERATORS, ids=lambda e: e.name)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_operator_on_device_matches_cpu_float64_reference(entry: OperatorEntry, device, dtype):
    g = torch.Generator().manual_seed(11)
    B, H, n_q, n_k, d_k, d_v = 2, 3, 5, 7, 11, 13
    q = torch.randn(B, H, n_q, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(B, H, n_k, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(B, H, n_k, d_v, generator=g, dtype=torch.float64)
    kw = {"causal": "bottom_right"} if entry.supports("causal") else {}
    out = entry.fn(*(t.to(device=device, dtype=dtype) for t in (q, k, v)), **kw)
    assert out.output.device.type == device and out.output.dtype == dtype
    ref = entry.reference(q, k, v, **kw)
    assert_close(out.output.cpu().double(), ref.output, dtype=dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_favor_features_are_drawn_on_the_generators_device(device):
    """A generator on the inputs' device (as an experiment seeds one next to its data) draws W there."""
    from attnlab.ops.linear import linear_attention
    from attnlab.ops.linear.features import gaussian_features

    g = torch.Generator(device=device).manual_seed(5)
    W = gaussian_features(4, 6, generator=g)
    assert W.device.type == device and W.shape == (6, 4) and W.dtype == torch.float64
    q, k, v = (torch.randn(2, 9, 4, generator=g, device=device, dtype=torch.float64) for _ in range(3))
    res = linear_attention(q, k, v, feature_map="favor+", num_features=6, generator=g, return_weights=True)
    assert res.output.device.type == device
    assert_close((res.weights @ v).cpu(), res.output.cpu(), dtype=torch.float64)
