"""The conditioning study's sweeps (attnlab.papers.invertibility.sweeps): the cases of a small plan listed
by hand, measured in that order with one log line each, and estimated as the sum of their cases."""

from __future__ import annotations

import pytest

from attnlab.papers.invertibility.cost import SETUP, case_estimate, expansion_estimate
from attnlab.papers.invertibility.sweeps import SweepPlan, measure_sweeps

PLAN = SweepPlan(w_cases=((2, 3, 2),), w_values=(0.1, 1.0), size_cases=((2, 2, 2),), size_w=(1.0,),
                 head_cases=((2, 2, 2),), extra_heads=1, dim_cases=((2, 2),), dims_beyond=1, head_w=0.5,
                 hp_max_rows=0, certify_max_rows=4, embedding="explicit", seed=0)
CASES = {
    "w": [(2, 3, 2, 4, 0.1), (2, 3, 2, 4, 1.0)],  # P = ceil(8 / 2)
    "size": [(2, 2, 2, 2, 1.0)],
    "heads": [(2, 2, 2, 1, 0.5), (2, 2, 2, 2, 0.5), (2, 2, 2, 3, 0.5)],  # P = 1 .. 2 + 1
    "dims": [(2, 2, 1, 4, 0.5), (2, 2, 2, 2, 0.5), (2, 2, 3, 2, 0.5)],  # d = 1 .. N + L - 2 + 1, P = ceil(4 / d)
}


def test_groups_list_the_cases_by_hand():
    got: dict[str, list] = {}
    for sweep, case, values in PLAN.groups():
        got.setdefault(sweep, []).extend(case(v) for v in values)
    assert got == CASES


def test_measure_sweeps_in_order_with_a_log_line_per_case():
    lines: list[dict] = []
    data = measure_sweeps(PLAN, lines.append)
    for sweep, cases in CASES.items():
        rows = getattr(data, sweep)
        assert [(r.N, r.L, r.d, r.P, r.w) for r in rows] == cases and {r.sweep for r in rows} == {sweep}
    assert len(lines) == 9 and lines[0] == {"sweep": "w", "N": 2, "L": 3, "d": 2, "P": 4, "w": 0.1,
                                            "float_rank": data.w[0].float_rank, "log10_ratio": data.w[0].log10_ratio}
    assert all(r.cert_lower is None for r in data.w) and all(r.hp_bits is None for r in data.size)  # 8 > 4 rows; hp off
    assert [r.cert_lower for r in data.heads] == [2, 4, 4]  # rank min(Pd, 4)
    assert [(x.N, x.L, x.d) for x in data.expansion] == [(2, 3, 2)]
    stored = data.to_dict([])
    assert list(stored) == ["w", "size", "heads", "dims", "expansion", "w_summary"] and stored["w"][0]["sweep"] == "w"


def test_estimate_sums_its_cases():
    est = PLAN.estimate()
    cases = [c for cs in CASES.values() for c in cs]
    parts = [case_estimate(*c, high_precision=False, certify=c[0] ** c[1] <= 4) for c in cases]
    want_calls = SETUP.calls + sum(e.calls for e in parts) + expansion_estimate(2, 3, 2).calls
    assert est.calls == want_calls
    assert est.python == pytest.approx(SETUP.python + sum(e.python for e in parts)
                                       + expansion_estimate(2, 3, 2).python, rel=1e-12)
