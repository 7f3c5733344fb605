"""One map fitted by every family of Sigma, the thesis's random search, and the uniform and random baselines."""

from __future__ import annotations

import pytest
import torch

from attnlab.papers.transformer_math.head_structure import best_sigma, fit_families
from attnlab.papers.transformer_math.sigma_fits import FITS, MASKS, baselines, fit_all, random_search
from tolerances import FLOAT64


def test_fit_all_holds_every_family_and_their_best():
    g = torch.Generator().manual_seed(3)
    H = torch.softmax(2 * torch.randn(7, 7, generator=g, dtype=torch.float64), -1)
    fits = fit_all(H, 2)
    direct = fit_families(H, 2)
    assert list(fits.by_family()) == list(FITS) == list(direct)
    for k in FITS:
        assert fits.of(k).distance == pytest.approx(direct[k].distance, abs=FLOAT64), k
    assert fits.sigma.distance == best_sigma(direct).distance
    assert fits.sigma.distance <= min(fits.shift.distance, fits.sigma2.distance, fits.sigma3.distance) + FLOAT64


def test_uniform_baseline_is_analytic():
    b = baselines(16, 3, draws=2, seed=0)
    # |U - I| = 2 (n - 1) over n rows: normalised (n - 1) / n; every one-hot family gives the same
    assert b.uniform["sigma1"] == pytest.approx(15 / 16, abs=FLOAT64)
    assert b.uniform["permutation"] == pytest.approx(15 / 16, abs=FLOAT64)
    # the best Sigma_2 member of U is the full band of width 7 in every interior row: strictly better
    assert b.uniform["sigma"] < b.uniform["sigma1"] - 0.2
    assert 0.5 < b.random["sigma"] < 0.8
    assert list(b.uniform) == list(b.random) == [*FITS, "sigma"]


def test_causal_baselines_sit_closer_to_sigma():
    """A causal map cannot weigh keys above the diagonal: causal uniform attention is already at 0.426 of the
    largest distance from Sigma, against 0.609 for bidirectional uniform attention."""
    causal, bidirectional = baselines(16, 3, draws=2, seed=0, causal=True), baselines(16, 3, draws=2, seed=0)
    assert (causal.mask, bidirectional.mask) == MASKS[::-1]
    assert causal.uniform["sigma"] == pytest.approx(0.426, abs=5e-4)
    assert bidirectional.uniform["sigma"] == pytest.approx(0.609, abs=5e-4)
    assert causal.random["sigma"] < bidirectional.random["sigma"] - 0.1


def test_exact_fit_never_above_random_search():
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        H = torch.softmax(3 * torch.randn(16, 16, generator=g, dtype=torch.float64), -1)
        d = fit_all(H, 3).sigma.distance
        assert d <= random_search(H, 64, 3, seed=5) + 1e-9


def test_random_search_starts_from_the_identity_and_is_seeded():
    n = 8
    I = torch.eye(n, dtype=torch.float64)
    assert random_search(I, 4, 3, seed=0) == 0.0  # I is Sigma_1 itself
    U = torch.full((n, n), 1.0 / n, dtype=torch.float64)
    once = random_search(U, 6, 3, seed=2)
    assert once == random_search(U, 6, 3, seed=2) <= float((U - I).abs().sum())
