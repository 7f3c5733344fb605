"""Sigma_1, Sigma_2(w), Sigma_3(T, W) as built, their exact fits, the report's baselines and the
counterexample to §3.1.2's uniqueness argument."""

from __future__ import annotations

import pytest
import torch

from attnlab.analysis.heads.projection import band_mask
from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.head_structure import (
    FAMILIES,
    error_cost,
    fit_band,
    fit_permutation,
    fit_shift,
    fit_sigma1,
    fit_sigma2,
    fit_sigma3,
    head_structure_report,
    projection_counterexample,
    shifted_identity,
    sigma1,
    sigma2,
    sigma3,
    sigma3_blocks,
)
from tolerances import FLOAT64


def test_sigma1_and_shifts():
    assert torch.equal(sigma1(5), torch.eye(5, dtype=torch.float64))
    S = shifted_identity(5, -1)
    assert S.argmax(-1).tolist() == [0, 0, 1, 2, 3]  # row 0 attends itself
    assert shifted_identity(5, 2).argmax(-1).tolist() == [2, 3, 4, 4, 4]


def test_sigma2_is_a_normalised_band_with_seeded_dropout():
    B = sigma2(7, 1, 2, normalize=False)
    assert torch.equal(B.bool(), band_mask(7, 1, 2))  # p = 0: the band itself
    P = sigma2(11, 2, 1, 0.4, seed=3)
    assert torch.equal(P, sigma2(11, 2, 1, 0.4, seed=3))
    assert torch.allclose(P.sum(-1), torch.ones(11, dtype=torch.float64), atol=1e-15)  # no empty row
    assert bool((P[~band_mask(11, 2, 1)] == 0).all())
    counts = (P > 0).sum(-1)
    assert torch.allclose(P[P > 0], (1.0 / counts.double()[:, None]).expand(11, 11)[P > 0], rtol=0, atol=1e-15)
    with pytest.raises(ConfigError, match=r"p must be a finite number in \[0, 1\)"):
        sigma2(5, 1, 1, 1.0)  # p = 1 empties every row: the text's p is in (0, 1)


def test_sigma2_drops_diagonal_cells_as_the_text_defines_it():
    """issue 34: "P = dropout(B, p)" exempts no cell of the band, and the thesis's createsintact drops diagonal
    cells too; attnlab's Sigma_2 used to keep the diagonal. Over 200 draws at p = 0.6 (w = 1, n = 9) a diagonal
    cell is kept in about 1 - 0.6 = 40% of the rows whose draw is not empty (P(empty row) = 0.6^3 = 22%,
    redrawn: 0.4 / (1 - 0.216) = 0.51), never in every row."""
    kept = torch.stack([sigma2(9, 1, 1, 0.6, seed=s).diagonal() > 0 for s in range(200)])
    assert 0.45 < float(kept[:, 1:-1].double().mean()) < 0.57
    # the fit searches the diagonal like any band cell: a map that looks at its neighbours, never at itself
    H = (band_mask(6, 1) & ~torch.eye(6, dtype=torch.bool)).double()
    H = H / H.sum(-1, keepdim=True)
    fit = fit_sigma2(H, w_max=1)
    assert fit.distance == pytest.approx(0.0, abs=1e-15) and fit.params["diagonal_kept"] == 0.0
    assert (fit.params["w1"], fit.params["w2"]) == (1, 1) and fit.params["p_hat"] == pytest.approx(6 / 16)


def test_sigma3_by_hand_and_its_rank():
    P = sigma3(7, [3], [3])  # centred: rows 2, 3, 4 attend token 3 (Figure 13's 3, 4, 5 -> 4, 0-based)
    assert P.argmax(-1).tolist() == [0, 1, 3, 3, 3, 5, 6]
    printed = sigma3(7, [3], [3], starts=[3])  # the printed P_r: the token opens its window
    assert printed.argmax(-1).tolist() == [0, 1, 2, 3, 3, 3, 6]
    two = sigma3(11, [2, 7], [3, 4])
    assert two.argmax(-1).tolist() == [0, 2, 2, 2, 4, 5, 7, 7, 7, 7, 10]
    assert int(torch.linalg.matrix_rank(two)) == 11 - (3 - 1) - (4 - 1)  # n - sum (w_i - 1): no permutation
    assert sigma3_blocks(11, [7, 2], [4, 3])[0].token == 2  # sorted by position


@pytest.mark.parametrize("tokens, windows, starts, match", [
    ([3, 4], [3, 3], None, "overlap"),
    ([3], [3], [4], "start <= token"),
    ([3], [9], [0], "start \\+ window <= n"),
    ([3], [2, 2], None, "one length"),
])
def test_sigma3_refuses_impossible_blocks(tokens, windows, starts, match):
    with pytest.raises(ConfigError, match=match):
        sigma3(7, tokens, windows, starts)


def test_members_of_a_family_fit_it_at_distance_zero_with_their_parameters():
    n = 11
    assert fit_sigma1(sigma1(n)).distance == 0.0
    assert fit_shift(shifted_identity(n, 1), k_max=3).params["k"] == 1
    P = sigma3(n, [2, 7], [3, 4])
    f3 = fit_sigma3(P)
    assert f3.distance == 0.0 and f3.params["blocks"] == [(2, 1, 3), (7, 6, 4)]
    assert fit_sigma3(P, max_blocks=1).params["blocks"] == [(7, 6, 4)]  # the bigger saving first
    first = fit_sigma3(sigma3(n, [2], [3], starts=[2]), anchor="first")
    assert first.distance == 0.0 and first.params["blocks"] == [(2, 2, 3)]
    f2 = fit_sigma2(sigma2(n, 1, 2, 0.3, seed=5), w_max=3)
    assert f2.distance == pytest.approx(0.0, abs=FLOAT64) and (f2.params["w1"], f2.params["w2"]) == (1, 2)
    perm = torch.eye(n, dtype=torch.float64)[torch.randperm(n, generator=torch.Generator().manual_seed(0))]
    assert fit_permutation(perm).distance == 0.0


def test_fit_distances_by_hand():
    n = 5
    U = torch.full((n, n), 1 / n, dtype=torch.float64)
    # one-hot rows against uniform: |1/5 - 1| + 4/5 = 8/5 per row
    assert fit_sigma1(U).distance == pytest.approx(8.0)
    assert fit_sigma1(U).normalized == pytest.approx(0.8)
    # with the box error eps = 0.1 every entry's error shrinks by 0.1: 8 - 25 * 0.1 ... floored at 0
    assert fit_sigma1(U, eps=0.1).distance == pytest.approx(n * (0.7 + 4 * 0.1))
    assert error_cost(torch.tensor([[0.3, -0.05]]), 0.1).item() == pytest.approx(0.2)


def test_the_report_gives_every_family_beside_its_baselines():
    n = 16
    rep = head_structure_report(torch.full((n, n), 1 / n, dtype=torch.float64), w_max=3, band_w=3, draws=2)
    assert set(rep.fits) == set(FAMILIES) and rep.n == n
    assert rep.fits["sigma1"].distance == pytest.approx(30.0)  # 16 rows of 2 * 15/16
    assert rep.fits["band"].distance == pytest.approx(9.75)  # the off-band mass of uniform attention
    assert rep.uniform["sigma1"] == pytest.approx(30.0 / 32)
    rows = rep.rows()
    assert rows[0]["family"] == "sigma1" and {"uniform", "random", "normalized"} <= set(rows[0])
    band = fit_band(torch.eye(n, dtype=torch.float64).roll(5, -1), w=1)
    assert band.distance == 0.0 and band.params["exact"]  # a permutation of rows undoes a cyclic shift


def test_the_counterexample_to_uniqueness():
    c = projection_counterexample()
    assert c.distance1 == c.distance2 == pytest.approx(0.5)
    assert c.difference == pytest.approx(0.2) and c.midpoint_nonzeros == 2 > c.s
    assert c.midpoint_distance == pytest.approx(0.5)  # as close as both, and outside X
    with pytest.raises(ConfigError, match="unique projection"):
        projection_counterexample(torch.eye(3, dtype=torch.float64))


def test_fits_refuse_batches():
    with pytest.raises(ConfigError, match="one finite square map"):
        fit_sigma2(torch.zeros(2, 3, 3))
