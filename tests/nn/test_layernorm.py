"""LayerNorm, eq. (2) of the math text, and PyTorch's variant."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnlab.errors import ConfigError
from attnlab.nn.layernorm import LayerNorm, layer_norm_paper


def test_paper_formula_by_hand():
    # z = (1, 2, 3, 6): mu = 3, deviations (-2, -1, 0, 3), sigma^2 = 14/4 = 3.5 (biased)
    ln = LayerNorm(4, "paper").double()
    with torch.no_grad():
        ln.gamma.copy_(torch.tensor([1.0, 2.0, 3.0, 0.5]))
        ln.beta.copy_(torch.tensor([0.0, 1.0, -1.0, 2.0]))
    out = ln(torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64))
    denom = math.sqrt(3.5) + 1e-6
    expected = [-2 / denom, 2 * (-1) / denom + 1, -1.0, 0.5 * 3 / denom + 2]
    assert out.tolist() == pytest.approx(expected, abs=1e-15)
    assert ln.eps == 1e-6


def test_standard_equals_torch_layer_norm():
    g = torch.Generator().manual_seed(0)
    ln = LayerNorm(7, "standard").double()
    with torch.no_grad():
        ln.gamma.copy_(torch.randn(7, generator=g, dtype=torch.float64))
        ln.beta.copy_(torch.randn(7, generator=g, dtype=torch.float64))
    z = torch.randn(3, 5, 7, generator=g, dtype=torch.float64)
    expected = F.layer_norm(z, (7,), ln.gamma, ln.beta, 1e-5)
    assert (ln(z) - expected).abs().max() < 1e-14
    assert ln.eps == 1e-5


def test_variants_differ_by_order_eps():
    z = torch.randn(3, 5, 11, dtype=torch.float64) * 3
    paper = LayerNorm(11, "paper", eps=1e-6).double()(z)
    standard = LayerNorm(11, "standard", eps=1e-6).double()(z)
    gap = (paper - standard).abs().max().item()
    assert 0 < gap < 1e-5  # sigma ~ 3: 1/(sigma+eps) vs 1/sqrt(sigma^2+eps) differ by ~eps/sigma^2


def test_constant_input_gives_beta_with_finite_gradient():
    ln = LayerNorm(5, "paper").double()
    with torch.no_grad():
        ln.beta.copy_(torch.arange(5.0))
    z = torch.full((3, 5), 2.0, dtype=torch.float64, requires_grad=True)
    out = ln(z)
    assert torch.equal(out, ln.beta.expand(3, 5))
    out.pow(2).sum().backward()
    assert torch.isfinite(z.grad).all()


def test_functional_without_affine():
    z = torch.tensor([[0.0, 4.0]], dtype=torch.float64)  # mu 2, sigma 2
    assert layer_norm_paper(z, None, None, eps=0.0).tolist() == [[-1.0, 1.0]]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: LayerNorm(5, "rmsnorm"), "unknown LayerNorm variant 'rmsnorm'"),
        (lambda: LayerNorm(0), "d_model must be positive"),
        (lambda: LayerNorm(5, eps=-1.0), "eps must be >= 0"),
        (lambda: LayerNorm(5)(torch.zeros(2, 7)), "expects last axis 5, got 7"),
    ],
)
def test_bad_input_messages(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
