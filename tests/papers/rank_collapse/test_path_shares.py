"""How a skip SAN's output splits over path lengths (rank-collapse.path-lengths' measurements)."""

import pytest
import torch

from attnlab.papers.rank_collapse.path_shares import (ARCHITECTURES, architecture_counts, count_shares, exact_stack,
                                                      mean_length, mean_share, path_products, shares,
                                                      stack_estimate)
from tolerances import FLOAT64


def test_count_shares_are_the_binomial_law():
    bert = count_shares(12, 12)
    assert sum(bert) == pytest.approx(1, abs=1e-15)
    assert bert[12] == pytest.approx((12 / 13) ** 12, rel=1e-15) and bert[11] == pytest.approx(bert[12], rel=1e-15)
    assert bert[12] == pytest.approx(0.3827, abs=1e-4)  # Dong et al.'s figure reads 0.38
    assert count_shares(2, 1) == [0.25, 0.5, 0.25]
    counts = architecture_counts()
    assert set(counts) == set(ARCHITECTURES) and counts["BERT-base (L=12, H=12)"] == bert


def test_shares_and_their_means_by_hand():
    Y = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    S = torch.stack([0.25 * Y, 0.75 * Y, torch.zeros_like(Y)])  # (3, 2, 2): lengths 0, 1, 2
    sh = shares(S, Y)
    assert sh.norm_share == pytest.approx([0.25, 0.75, 0.0], abs=FLOAT64)
    assert sh.signed_share == pytest.approx([0.25, 0.75, 0.0], abs=FLOAT64)
    assert mean_share([[0.2, 0.8], [0.4, 0.6]]) == pytest.approx([0.3, 0.7], abs=FLOAT64)
    assert mean_length([0.25, 0.75, 0.0]) == 0.75


def test_exact_stack_sums_its_paths_to_the_output():
    st = exact_stack(3, 2, 5, 7, torch.Generator().manual_seed(0))
    assert (st.L, st.H) == (3, 2) and st.count_share == count_shares(3, 2)
    assert st.recursion_vs_enumeration <= FLOAT64 and st.sum_vs_output <= FLOAT64
    assert sum(st.signed_share) == pytest.approx(1, abs=FLOAT64) and len(st.residual_by_length) == 4
    assert st.to_dict()["L"] == 3
    assert stack_estimate(3, 2, 5, 7).peak_bytes > 0


def test_path_products_of_rank_one_maps_have_no_residual():
    n, L, H = 4, 3, 2
    uniform = torch.full((1, H, n, n), 1 / n, dtype=torch.float64)  # every map 1 1^T / n: rank one
    identity = torch.eye(n, dtype=torch.float64).expand(1, H, n, n)  # rank n: residual of its rank-one cut
    prods = path_products([uniform] * L, 5, torch.Generator().manual_seed(0))
    assert sorted(prods) == [1, 2, 3] and all(p.max <= FLOAT64 for p in prods.values())
    full = path_products([identity] * L, 3, torch.Generator().manual_seed(0))
    assert full[1].median > 0.5  # I minus its best rank-one approximation: most of I remains
    assert all(p.min == pytest.approx(full[1].median, abs=FLOAT64) for p in full.values())  # I I ... I = I
    assert set(full[2].to_dict()) == {"median", "q25", "q75", "min", "max"}
