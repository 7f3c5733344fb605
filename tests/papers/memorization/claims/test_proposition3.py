"""Proposition 3's claims: the reduction identity, the trained FCN against its bound with its
control, and the matched attention layer beside it; numbers asserted, tolerances stated."""

from __future__ import annotations

import pytest

from attnlab.registry import all_claims
from tolerances import FLOAT64

IDS = ("memorization.proposition3-reduction", "memorization.proposition3-fcn-trained",
       "memorization.proposition3-attention-beside")


def _run(cid, seed):
    (c,) = [c for c in all_claims() if c.id == cid]
    r = c.run(seed)
    assert r.error is None, r.error
    return r


def test_registered_under_the_proposition3_prefix():
    ids = sorted(c.id for c in all_claims() if c.id.startswith("memorization.proposition3"))
    assert ids == sorted(IDS)


@pytest.mark.parametrize("seed", [0, 1])
def test_reduction(seed):
    r = _run(IDS[0], seed)
    m, v = r.check, r.check.values
    # the text's map (b_1 := b'_1 - ...) is measured, and differs; the corrected sign is exact
    assert r.verdict == "differs" and m.role == "text" and m.relation == "<=" and m.threshold == 1e-12
    assert m.measured == v["max_abs_error_paper_sign"] > 1e-2  # the sign slip matters: off by O(0.1)
    assert v["max_abs_error"] <= FLOAT64  # b_1 := b'_1 + ...: the reduction holds
    assert (v["T"], v["n"], v["d"], v["m"], v["d_out"]) == (11, 3, 7, 5, 2)
    assert v["kruskal_rank_queries"] == 3 and v["assumption1"] and v["rank_E"] == 3 and v["assumption2"]
    assert not m.cannot_decide
    # App. F's identity under the printed map: the differs row evidences the sign record
    assert (m.anchor, m.erratum) == ("memorization.appf-reduction", "memorization.appF-map-sign")


@pytest.mark.parametrize("seed", [0, 1])
def test_fcn_trained_stays_above_zero_beyond_the_bound(seed):
    r = _run(IDS[1], seed)
    m, v = r.check, r.check.values
    assert r.verdict == "reproduced" and m.relation == ">=" and m.threshold == 1e-3
    assert m.measured >= 0.1  # measured 0.58 (seed 0), 0.75 (seed 1): far from zero, not just above 1e-3
    assert v["residual_above"] == m.measured
    assert (v["T_above"], v["bound"], v["m"]) == (72, 36, 7)  # T = 72 > bound 36, m = 7 matched
    assert v["T_below"] == 9 and v["residual_below"] <= 1e-8 and not m.cannot_decide  # the control
    assert v["homogeneity_bound"] == 29  # nm/d_out+m+1


@pytest.mark.parametrize("seed", [0, 1])
def test_attention_beside(seed):
    r = _run(IDS[2], seed)
    m, v = r.check, r.check.values
    assert r.verdict == "reproduced" and m.role == "construction" and m.relation == "<=" and m.threshold == 1e-8
    assert m.measured <= FLOAT64  # measured ~1e-14
    assert v["T"] == 9 and v["bound_name"] == "Theorem 1" and v["rank_Z"] == 9
    assert v["proposition3_bound"] == 36 and v["m"] == 7
