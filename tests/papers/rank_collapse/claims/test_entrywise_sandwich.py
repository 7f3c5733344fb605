"""rank-collapse.lemma-a3-sandwich and rank-collapse.eq9-sign-error (§2.4, eqs. (6)-(10))."""

import math

import torch

from attnlab.papers.rank_collapse.claims.entrywise_sandwich import E_LIMIT, sandwich_terms
from attnlab.registry import select_claims


def test_lemma_holds_within_its_range_and_fails_beyond():
    (c,) = select_claims(["rank-collapse.lemma-a3-sandwich"])
    m = c.run(seed=0).measurement
    assert m.passed and m.tolerance == 1e-12 and m.measured <= 1e-12
    v = m.values
    assert v["trials_within"] + v["trials_beyond"] == 400 and v["trials_within"] > 100
    assert v["worst_violation_beyond"] > 0.1  # e^D > 1 + 2D there
    # the upper bound is loose by about a factor 2 at small D: (e^D - 1)/2D -> 1/2
    assert all(0.3 < t <= (math.exp(E_LIMIT) - 1) / (2 * E_LIMIT) + 1e-12 for t in v["upper_tightness_by_scale"].values())


def test_eq9_fails_in_most_trials():
    (c,) = select_claims(["rank-collapse.eq9-sign-error"])
    m = c.run(seed=1).measurement
    assert m.passed and m.measured >= 0.5 and m.values["largest_violation"] > 1e-3


def test_terms_by_hand_for_a_zero_residual():
    """X = 1 x^T: R = 0, E = 0, D = 0 and P = P~ = uniform rows."""
    X = torch.ones(3, 1, dtype=torch.float64) @ torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    t = sandwich_terms(X, torch.eye(2, dtype=torch.float64), 2)
    assert (t["D"] == 0).all() and (t["R"] == 0).all()
    assert torch.allclose(t["P"], torch.full((3, 3), 1 / 3, dtype=torch.float64), atol=1e-15)
    assert torch.allclose(t["P_tilde"], t["P"], atol=1e-15)
