"""rank-collapse.theorem22-bound (§2.2, Theorem 2.2) and its single-head SAN helpers."""

import math

import torch

from attnlab.papers.rank_collapse.single_head_san import layer_constant, single_head_layer, theorem22_bound
from attnlab.registry import select_claims
from tolerances import FLOAT64


def test_bound_is_never_violated():
    (c,) = select_claims(["rank-collapse.theorem22-bound"])
    r = c.run(seed=0)
    assert r.error is None and r.verdict == "reproduced" and r.check.anchor == "rank-collapse.theorem-2-2"
    v = r.check.values
    assert r.check.threshold == 1.0 and r.check.measured == v["worst"]["two"]  # the notes' residual decides
    for kind in ("two", "composite"):
        assert 0 < v["adversarial"][kind] <= 1.0 and set(v["random_by_layer"][kind]) == {1, 2, 3}
        # deeper layers sit further below the bound (doubly exponential slack)
        layers = v["random_by_layer"][kind]
        assert layers[3] < layers[2] < layers[1]


def test_bound_and_constant_by_hand():
    """W_Q W_K^T = 2 I (d_qk = 1 ... here d = 2, d_qk = 2, W_Q = sqrt2 I, W_K = sqrt2 I): ||2I||_1 = 2;
    W_V = I: ||I||_{1,inf} = 1; c = 4 * 2 / sqrt 2 = 4 sqrt 2. Bound for L = 2: c^4 r^9."""
    I = torch.eye(2, dtype=torch.float64)
    c = layer_constant(math.sqrt(2) * I, math.sqrt(2) * I, I).item()
    assert abs(c - 4 * math.sqrt(2)) < 1e-14
    assert abs(theorem22_bound(c, 0.5, 2) - c**4 * 0.5**9) < FLOAT64
    assert theorem22_bound(c, 0.0, 3) == 0.0 and theorem22_bound(1e3, 1e3, 8) == math.inf


def test_layer_on_equal_rows_returns_equal_rows():
    """X = 1 x^T: every row attends uniformly to equal rows, SA(X) = 1 (W_V^T x)^T."""
    x = torch.tensor([[1.0, -2.0, 0.5]], dtype=torch.float64)
    X = torch.ones(4, 1, dtype=torch.float64) @ x
    W = torch.randn(3, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    Y = single_head_layer(X, W[:, :2], W[:, 1:], W)
    assert torch.allclose(Y, torch.ones(4, 1, dtype=torch.float64) @ (x @ W), atol=1e-14)
