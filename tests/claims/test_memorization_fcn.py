"""Proposition 3's claims: the reduction identity, the trained FCN against its bound with its
control, and the matched attention layer beside it; numbers asserted, tolerances stated."""

from __future__ import annotations

import re

import pytest

from attnlab.registry import all_claims

IDS = ("memorization.proposition3-reduction", "memorization.proposition3-fcn-trained",
       "memorization.proposition3-attention-beside")


def _run(cid, seed):
    (c,) = [c for c in all_claims() if c.id == cid]
    r = c.run(seed)
    assert r.error is None, r.error
    return r


def _number(pattern, text):
    return float(re.search(pattern, text).group(1))


def test_registered_under_the_proposition3_prefix():
    ids = sorted(c.id for c in all_claims() if c.id.startswith("memorization.proposition3"))
    assert ids == sorted(IDS)


@pytest.mark.parametrize("seed", [0, 1])
def test_reduction(seed):
    r = _run(IDS[0], seed)
    m = r.measurement
    assert r.status == "pass" and m.relation == "<=" and m.tolerance == 1e-12
    assert m.measured <= 1e-12
    assert "Kruskal rank of queries 3 (Assumption 1 needs 3), rank E 3" in m.detail
    assert _number(r"printed sign .* error is ([0-9.e+-]+)", m.detail) > 1e-2  # the typo matters


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_fcn_trained_stays_above_zero_beyond_the_bound(seed):
    r = _run(IDS[1], seed)
    m = r.measurement
    assert r.status == "pass" and m.relation == ">=" and m.tolerance == 1e-3
    assert m.measured >= 0.1  # measured 0.58 (seed 0), 0.75 (seed 1): far from zero, not just above 1e-3
    assert "at T=72 > bound 36 (m=7 matched" in m.detail
    assert _number(r"control at T=9: ([0-9.e+-]+)", m.detail) <= 1e-8
    assert "nm/d_out+m+1 = 29" in m.detail


@pytest.mark.parametrize("seed", [0, 1])
def test_attention_beside(seed):
    r = _run(IDS[2], seed)
    m = r.measurement
    assert r.status == "pass" and m.relation == "<=" and m.tolerance == 1e-8
    assert m.measured <= 1e-12  # measured ~1e-14
    assert "T=9 (Theorem 1); rank Z 9" in m.detail and "bound 36" in m.detail
