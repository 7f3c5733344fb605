"""The rank upper bounds (Propositions 2, 5) survive the adversarial search, and the skip layer
of Proposition 4 turns Assumption 3 into Assumption 1; numbers asserted, tolerances stated."""

from __future__ import annotations

import pytest

from attnlab.registry import select_claims


def _run(cid, seed):
    (c,) = select_claims([cid])
    r = c.run(seed)
    assert r.error is None, r.error
    return r


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("cid, bound, control", [
    ("memorization.proposition2-shared-upper", 7, 12),  # H(n-1)+1 = 7; per-example contexts reach T = 12
    ("memorization.proposition5-constant-rowsum", 7, 8),  # H(d-1)+1 = 7; without the row sum: H d = 8
])
def test_upper_bound_holds_and_is_reached(cid, bound, control, seed):
    r = _run(cid, seed)
    m, v = r.check, r.check.values
    assert r.verdict == "reproduced" and m.relation == "<=" and m.threshold == 0
    assert m.measured == 0  # the search reaches the bound exactly: it is tight, never exceeded
    assert v["bound"] == bound and v["max_rank"] == bound and v["attempts"] == 144
    # no attempt came near a (bound+1)-th singular value: float64 round-off only
    assert v["max_ratio_above_bound"] < 1e-13
    assert v["control_max_rank"] == control  # the hypothesis matters
    assert v["rank_rtol"] == 1e-10 and v["logit_scales"] == [0.1, 1.0, 10.0, 100.0]
    assert f"bound {bound}, max rank {bound} " in m.detail  # the detail states the same numbers


def test_proposition5_tokens_have_the_constant_row_sum():
    v = _run("memorization.proposition5-constant-rowsum", 0).check.values
    assert (v["H"], v["n"], v["d"], v["d_h"], v["T"], v["C"]) == (2, 3, 4, 4, 12, 1.0)
    assert v["max_rowsum_error"] < 1e-15


@pytest.mark.parametrize("seed", [0, 1])
def test_proposition4_skip_layer(seed):
    r = _run("memorization.proposition4-skip", seed)
    m, v = r.check, r.check.values
    assert r.verdict == "reproduced" and m.relation == ">=" and m.threshold == 0
    assert m.measured == 0  # min rank E' = n = 3 exactly (Assumption 2 is preserved, not exceeded)
    assert (v["kruskal_rank_before"], v["kruskal_rank_after"], v["n"]) == (1, 7, 3)
    assert v["min_context_rank_after"] == 3 and v["assumption2_before"] is True
    assert v["assumption3"] is True
    assert v["max_gap_to_assumption3_vectors"] < 1e-14
    assert "Kruskal rank of queries 1 before, 7 after (need 3)" in m.detail
