"""chunked_sum: the sum of per-chunk losses and its gradient, chunk by chunk, equal to one pass (float64)."""

import pytest
import torch

from attnlab.training.chunked import chunked_sum
from tolerances import FLOAT64


def _share(params, chunk):
    x, y = chunk
    return ((torch.tanh(x @ params["W"]) @ params["c"] - y) ** 2).sum() / 40


def _problem():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(40, 5, generator=g, dtype=torch.float64), torch.randn(40, generator=g, dtype=torch.float64)
    params = {"W": torch.randn(5, 7, generator=g, dtype=torch.float64, requires_grad=True),
              "c": torch.randn(7, generator=g, dtype=torch.float64, requires_grad=True)}
    return x, y, params


@pytest.mark.parametrize("size", [1, 7, 13, 40])
def test_value_and_gradient_equal_one_pass(size):
    x, y, p = _problem()
    whole = _share(p, (x, y))
    g_whole = torch.autograd.grad(whole, [p["W"], p["c"]])
    chunks = [(x[s:s + size], y[s:s + size]) for s in range(0, 40, size)]
    value = chunked_sum(_share, p, chunks)
    g = torch.autograd.grad(2.0 * value, [p["W"], p["c"]])  # an outer factor reaches the stored gradient
    assert abs(float((value - whole).detach())) <= FLOAT64
    for a, b in zip(g, g_whole):
        assert float((a - 2.0 * b).abs().max()) <= FLOAT64


def test_gradient_flows_through_what_made_the_params():
    """The params may be computed (a masked weight): the chain rule continues behind the chunked sum."""
    x, y, p = _problem()
    mask = (torch.arange(35, dtype=torch.float64).reshape(5, 7) % 2)
    (gW,) = torch.autograd.grad(chunked_sum(_share, {"W": p["W"] * mask, "c": p["c"]},
                                            [(x[:20], y[:20]), (x[20:], y[20:])]), [p["W"]])
    (gW_ref,) = torch.autograd.grad(_share({"W": p["W"] * mask, "c": p["c"]}, (x, y)), [p["W"]])
    assert float((gW - gW_ref).abs().max()) <= FLOAT64
    assert float(gW[mask == 0].abs().max()) == 0.0


def test_without_grad_only_the_value():
    x, y, p = _problem()
    with torch.no_grad():
        value = chunked_sum(_share, p, [(x[:10], y[:10]), (x[10:], y[10:])])
    assert not value.requires_grad
    assert abs(float(value) - float(_share(p, (x, y)).detach())) <= FLOAT64


def test_no_chunks_is_an_error():
    with pytest.raises(ValueError, match="at least one chunk"):
        chunked_sum(_share, _problem()[2], [])
