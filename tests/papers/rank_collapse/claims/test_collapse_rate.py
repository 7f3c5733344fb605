"""rank-collapse.doubly-exponential-rate (§2.2, Theorem 2.2's exponent 3)."""

import torch

from attnlab.papers.rank_collapse.claims.collapse_rate import residual_trajectory
from attnlab.papers.rank_collapse.single_head_san import random_single_head_weights
from attnlab.registry import select_claims


def test_exponent_is_near_three_and_bound_is_vacuous():
    (c,) = select_claims(["rank-collapse.doubly-exponential-rate"])
    r = c.run(seed=1)
    m = r.check
    # the notes state a bound, not a rate: the rate is attnlab's own statement (holds), not a reproduction
    assert (m.role, r.verdict) == ("own", "holds") and not c.anchor
    assert m.threshold == 3.0 and m.tolerance == 0.5 and abs(m.measured - 3) <= 0.5
    assert "regime" in m.where and "small logits" in m.quantity  # the regime is part of the statement
    v = m.values
    assert v["pairs"] >= 20
    assert v["median_r2_vs_3_pow_l"] > 0.99 > v["median_r2_vs_l"]  # doubly, not simply, exponential
    assert min(v["sqrt_c_r0"]) > 1  # the bound does not go to 0 at this initialisation
    assert v["outside_regime"]["scale"] == 2.0 and v["outside_regime"]["exponent"] < m.measured  # sharper: slower


def test_trajectory_has_one_entry_per_layer_and_decreases():
    g = torch.Generator().manual_seed(0)
    r, rel = residual_trajectory(torch.randn(16, 16, generator=g, dtype=torch.float64),
                                 random_single_head_weights(4, 16, 16, g))
    assert len(r) == len(rel) == 5 and r[4] < r[3] < r[2] < r[1] < r[0]
    assert all(0 <= x <= 2 for x in rel)  # mean residual <= 2 (1 - 1/n) ||X|| in composite norm
