"""The exact L1 projection onto band + sparse error (eqs. 21-22), the permutation before it, and
the baselines: hand-derived values, properties for all inputs, and exhaustive references."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.analysis.heads.projection import (
    band_mask,
    band_sparse_distance,
    best_row_permutation,
    exhaustive_row_permutation,
    in_band_sparse,
    max_l1_distance,
    normalized_distance,
    placement_costs,
    project_band_sparse,
    random_attention,
    second_minimiser,
)
from attnlab.analysis.heads.maps import uniform_attention
from attnlab.errors import ConfigError
from tolerances import FLOAT64, assert_close

H3 = torch.tensor([[0.7, 0.0, 0.3], [0.0, 1.0, 0.0], [0.3, 0.0, 0.7]], dtype=torch.float64)


def test_band_mask_by_hand():
    B = band_mask(5, 1, 2)  # keys from i - 1 to i + 2
    assert B.int().tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [0, 1, 1, 1, 1], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]]
    assert torch.equal(band_mask(5, 0), torch.eye(5, dtype=torch.bool))


def test_the_three_by_three_projection_by_hand():
    band = band_mask(3, 0)
    box = project_band_sparse(H3, band, 0.1)
    assert_close(box.X, torch.tensor([[0.7, 0, 0.1], [0, 1, 0], [0.1, 0, 0.7]], dtype=torch.float64))
    assert box.distance.item() == pytest.approx(0.4) and bool(box.unique)
    one = project_band_sparse(H3, band, 0.1, 1)
    assert one.distance.item() == pytest.approx(0.5) and not bool(one.unique)
    assert one.support.nonzero().tolist() == [[0, 2]]  # ties go to the first entry in row-major order
    X2 = second_minimiser(H3, band, 0.1, 1)
    assert X2[2, 0].item() == pytest.approx(0.1) and X2[0, 2].item() == 0.0
    assert (H3 - X2).abs().sum().item() == pytest.approx(0.5)
    assert second_minimiser(H3, band, 0.1, 2) is None  # both fit: unique
    assert project_band_sparse(H3, band, 0.1, 0).distance.item() == pytest.approx(0.6)


def test_distance_matches_the_projection_and_membership():
    H = random_attention(7, seed=0, batch=(3,))
    band = band_mask(7, 1)
    for s in (None, 0, 4, 100):
        p = project_band_sparse(H, band, 0.05, s)
        assert_close(p.distance, band_sparse_distance(H, band, 0.05, s))
        assert_close(p.distance, (H - p.X).abs().sum((-2, -1)))
        assert bool(in_band_sparse(p.X, band, 0.05, s).all())


def _member(n, band, eps, s, g):
    X = torch.randn(n, n, generator=g, dtype=torch.float64) * band
    off = (~band).flatten().nonzero()[:, 0]
    k = off.numel() if s is None else min(s, off.numel())
    pick = off[torch.randperm(off.numel(), generator=g)[:k]]
    X.view(-1)[pick] = (2 * torch.rand(k, generator=g, dtype=torch.float64) - 1) * eps
    return X


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.sampled_from([3, 5, 7]), w=st.integers(0, 2),
       eps=st.floats(0.0, 0.5), s=st.sampled_from([None, 0, 1, 3, 8]))
def test_projection_is_optimal_feasible_and_idempotent(seed, n, w, eps, s):
    g = torch.Generator().manual_seed(seed)
    H = torch.randn(n, n, generator=g, dtype=torch.float64) * 0.3
    band = band_mask(n, w)
    p = project_band_sparse(H, band, eps, s)
    assert bool(in_band_sparse(p.X, band, eps, s))
    for _ in range(20):  # no member of X is closer
        X = _member(n, band, eps, s, g)
        assert (H - X).abs().sum().item() >= p.distance.item() - FLOAT64
    again = project_band_sparse(p.X, band, eps, s)
    assert again.distance.item() == 0.0 and torch.equal(again.X, p.X)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.sampled_from([3, 5, 7]), eps=st.floats(0.0, 0.5))
def test_box_case_distance_grows_by_exactly_the_distance_to_the_projection(seed, n, eps):
    """|H - X| = |H - X~| + |X - X~| for every X in the box set: X~ is the unique minimiser."""
    g = torch.Generator().manual_seed(seed)
    H = torch.randn(n, n, generator=g, dtype=torch.float64)
    band = band_mask(n, 1)
    Xs = project_band_sparse(H, band, eps).X
    X = _member(n, band, eps, None, g)
    lhs = (H - X).abs().sum()
    rhs = (H - Xs).abs().sum() + (X - Xs).abs().sum()
    assert lhs.item() == pytest.approx(rhs.item(), abs=FLOAT64)


def test_placement_costs_are_the_per_row_distances():
    H = random_attention(5, seed=4)
    band = band_mask(5, 1)
    for s in (None, 0):
        C = placement_costs(H, band, 0.05, s)
        assert C.diagonal().sum().item() == pytest.approx(band_sparse_distance(H, band, 0.05, s).item())
        perm = torch.tensor([3, 0, 4, 1, 2])
        assert C[perm, torch.arange(5)].sum().item() == pytest.approx(
            band_sparse_distance(H[perm], band, 0.05, s).item())
    with pytest.raises(ConfigError, match="separate only for s = None"):
        placement_costs(H, band, 0.05, 2)


@pytest.mark.parametrize("s", [None, 0, 2, 5])
@pytest.mark.parametrize("axis", ["rows", "columns"])
def test_best_permutation_equals_enumeration(s, axis):
    n = 6
    g = torch.Generator().manual_seed(7)
    P = torch.eye(n, dtype=torch.float64)[torch.randperm(n, generator=g)]
    H = 0.7 * P + 0.3 * random_attention(n, seed=7)
    band = band_mask(n, 1)
    fit = best_row_permutation(H, band, 0.05, s, axis=axis, exhaustive_limit=0)
    _, brute = exhaustive_row_permutation(H if axis == "rows" else H.T, band, 0.05, s)
    assert fit.exact and fit.distance == pytest.approx(brute, abs=FLOAT64) and fit.lower_bound <= brute + FLOAT64
    assert fit.method == ("assignment" if s in (None, 0) else "assignment-certified")
    permuted = H[fit.perm] if axis == "rows" else H[:, fit.perm]
    assert fit.distance == pytest.approx(band_sparse_distance(permuted, band, 0.05, s).item())


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_best_permutation_distance_does_not_depend_on_the_order_of_rows(seed):
    n = 7
    H = random_attention(n, seed=seed)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    band = band_mask(n, 1)
    a = best_row_permutation(H, band, 0.03).distance
    b = best_row_permutation(H[perm], band, 0.03).distance
    assert a == pytest.approx(b, abs=FLOAT64)


def test_baselines():
    assert max_l1_distance(7) == 14.0
    one_hot = torch.eye(7, dtype=torch.float64)
    assert (one_hot - one_hot.roll(1, -1)).abs().sum().item() == max_l1_distance(7)  # disjoint rows reach 2n
    assert normalized_distance(7.0, 7) == 0.5
    assert_close(uniform_attention(5).sum(-1), torch.ones(5, dtype=torch.float64))
    R = random_attention(5, seed=3, batch=(2,))
    assert torch.equal(R, random_attention(5, seed=3, batch=(2,))) and R.shape == (2, 5, 5)
    assert_close(R.sum(-1), torch.ones(2, 5, dtype=torch.float64))
    # uniform attention projected on the w = 3 band of a 16 x 16 map: the off-band mass, 156 / 16
    assert band_sparse_distance(uniform_attention(16), band_mask(16, 3), 0.0).item() == pytest.approx(9.75)


def test_causal_baselines_see_only_the_past():
    """A causal head's baselines: row i spread over the keys j <= i, nothing above the diagonal."""
    U = uniform_attention(5, causal=True)
    assert_close(U[3], torch.tensor([0.25, 0.25, 0.25, 0.25, 0.0], dtype=torch.float64))
    R = random_attention(6, seed=3, batch=(2,), causal=True)
    assert_close(R.sum(-1), torch.ones(2, 6, dtype=torch.float64))
    past = torch.ones(6, 6, dtype=torch.bool).tril()
    assert bool((R[..., ~past] == 0).all()) and bool((R[..., past] > 0).all())
    assert_close(R[..., 0, 0], torch.ones(2, dtype=torch.float64))  # the first query sees only itself


@pytest.mark.parametrize("kwargs, match", [
    ({"H": torch.ones(3, 4)}, "square matrices"),
    ({"band": torch.ones(3, 3)}, "boolean mask of shape"),
    ({"eps": -0.1}, "eps must be a finite number"),
    ({"s": -1}, "s must be an integer >= 0"),
])
def test_bad_input_says_what_to_change(kwargs, match):
    args = {"H": H3, "band": band_mask(3, 0), "eps": 0.1, "s": None, **kwargs}
    with pytest.raises(ConfigError, match=match):
        project_band_sparse(**args)


def test_exhaustive_reference_is_bounded():
    with pytest.raises(ConfigError, match="n <= 9"):
        exhaustive_row_permutation(torch.eye(10, dtype=torch.float64), band_mask(10, 1), 0.1)
    with pytest.raises(ConfigError, match="one map"):
        best_row_permutation(torch.eye(3, dtype=torch.float64).expand(2, 3, 3), band_mask(3, 1), 0.1)
