"""The scaling experiment's model: one attention head on positional copy, with logit scale c."""

import dataclasses
import math

import pytest
import torch

from attnlab.papers.transformer_math.scaling_model import CopyAttention, measure
from attnlab.tasks import copy_batch

# distinct primes so an axis mix-up fails: V, n, d_model, d_head, batch
V, N, D_MODEL, D_HEAD, B = 7, 5, 11, 3, 13


def _model(scale="1/sqrt(d)", seed=0):
    return CopyAttention(V=V, n=N, d_model=D_MODEL, d_head=D_HEAD, scale=scale, logit_init_scale=1.0,
                         generator=torch.Generator().manual_seed(seed))


def test_shapes_and_parameters():
    m = _model()
    b = copy_batch(B, N, V, generator=torch.Generator().manual_seed(1))
    z, values = m.logits_and_values(b)
    assert z.shape == (B, 1, N) and values.shape == (B, N, D_HEAD)
    assert m(b).shape == (B, V)
    shapes = {name: tuple(p.shape) for name, p in m.named_parameters()}
    assert shapes == {"E": (V, D_MODEL), "P": (N, D_MODEL), "R": (N, D_MODEL), "W_Q": (D_MODEL, D_HEAD),
                      "W_K": (D_MODEL, D_HEAD), "W_V": (D_MODEL, D_HEAD), "W_U": (D_HEAD, V)}


def test_the_scale_is_the_only_difference():
    # the same generator state gives the same weights; c = 1 multiplies the logits by sqrt(d_head)
    scaled, unscaled = _model("1/sqrt(d)"), _model("none")
    assert all(torch.equal(p, q) for p, q in zip(scaled.parameters(), unscaled.parameters()))
    b = copy_batch(B, N, V, generator=torch.Generator().manual_seed(2))
    z_s, _ = scaled.logits_and_values(b)
    z_u, _ = unscaled.logits_and_values(b)
    torch.testing.assert_close(z_u, z_s * math.sqrt(D_HEAD), rtol=1e-6, atol=1e-6)


def test_measure_is_bounded_and_matches_the_loss():
    m = _model()
    b = copy_batch(B, N, V, generator=torch.Generator().manual_seed(3))
    rec = measure(m, b)
    assert {f.name for f in dataclasses.fields(rec)} == {"loss", "accuracy", "entropy", "grad_norm"}
    assert 0 < rec.entropy <= math.log(N) + 1e-6  # between one-hot and uniform
    assert 0 <= rec.accuracy <= 1 and rec.grad_norm > 0
    loss = torch.nn.functional.cross_entropy(m(b), b.targets).item()
    assert rec.loss == pytest.approx(loss, rel=1e-6)
