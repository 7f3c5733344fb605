"""Theorem 1's and Proposition 1's claims: every case the detail names is in the structured values."""

from __future__ import annotations

from attnlab.registry import select_claims
from tolerances import CONSTRUCTION_LABELS


def _run(cid, seed=0):
    (c,) = select_claims([cid])
    r = c.run(seed)
    assert r.error is None, r.error
    return r


def test_theorem1_construction_values():
    r = _run("memorization.theorem1-construction")
    m, v = r.check, r.check.values
    assert r.verdict == "reproduced" and m.role == "construction" and m.relation == "<=" and m.threshold == 1e-8
    assert (v["d"], v["n"], v["d_h"]) == (64, 32, 64)
    assert [(c["H"], c["T"], c["rank_Z"]) for c in v["cases"]] == [(1, 32, 32), (4, 125, 125)]  # T = H(r-1)+1
    assert m.measured == max(c["max_abs_error"] for c in v["cases"]) <= CONSTRUCTION_LABELS
    assert all(c["sigma_min_Z"] > 0 for c in v["cases"])


def test_proposition1_rank_values():
    r = _run("memorization.proposition1-rank")
    m, v = r.check, r.check.values
    assert r.verdict == "reproduced" and m.role == "construction" and m.relation == ">=" and m.threshold == 0
    cases = [(c["H"], c["d_h"], c["T"], c["shared"], c["need"]) for c in v["cases"]]
    assert cases == [(4, 64, 125, False, 125), (3, 16, 46, True, 46), (2, 64, 40, True, 40)]
    assert m.measured == min(c["rank_Z"] - c["need"] for c in v["cases"]) == 0
