"""Crossovers, memory slopes and the targets of a benchmark run, on hand-made rows."""

from __future__ import annotations

import math

import pytest

from attnlab.bench.stability import loglog_slope
from attnlab.bench.targets import crossover, evaluate_targets, memory_slopes
from tolerances import FLOAT64


def row(variant, n, time_ms, peak_mb=None, order="linear", causal=False, status="ok"):
    return {"variant": variant, "n": n, "time_ms": time_ms, "peak_mb": peak_mb, "order": order,
            "causal": causal, "status": status, "ratio": None}


def test_crossover_interpolates_in_log_log():
    # ratio 2 at n=1000, 0.5 at n=4000: log r crosses 0 halfway in log n -> n = 2000
    x = crossover([(4000, 0.5), (1000, 2.0)])
    assert x["status"] == "crosses" and x["crossover_n"] == pytest.approx(2000, rel=FLOAT64)
    assert x["between"] == [1000, 4000]
    assert crossover([(1000, 0.9), (2000, 0.5)])["status"] == "faster throughout"
    assert crossover([(1000, 0.5), (2000, 1.5)])["status"] == "slower throughout"
    # slower again after being faster: the last crossing counts
    assert crossover([(1, 0.5), (2, 2.0), (4, 0.5)])["crossover_n"] == pytest.approx(2 * math.sqrt(2))


def test_loglog_slope_by_hand():
    assert loglog_slope([1, 2, 4], [3, 6, 12]) == pytest.approx(1.0, abs=FLOAT64)
    assert loglog_slope([1, 2, 4], [1, 4, 16]) == pytest.approx(2.0, abs=FLOAT64)
    assert loglog_slope([8], [1]) is None


def _rows(lin_causal_ms=100.0, window_ms=60.0, softmax_ms=1100.0, quad_peak=False):
    rows = []
    for n in (2048, 4096, 8192):
        s = n / 8192
        rows += [row("sdpa", n, 1000.0 * s * s, order="quadratic"),
                 row("sdpa-causal", n, 600.0 * s * s, order="quadratic", causal=True),
                 row("softmax", n, softmax_ms * s * s, order="quadratic"),
                 row("linear-causal", n, lin_causal_ms * s, peak_mb=(n / 100) ** (2 if quad_peak else 1),
                     causal=True),
                 row("window-gather", n, window_ms * s, peak_mb=n / 10),
                 row("window-flex", n, 2 * window_ms * s, peak_mb=n / 10)]
    return rows


def test_targets_pass_and_fail_on_the_numbers():
    t = {x["target"]: x for x in evaluate_targets(_rows())}
    assert t["causal-linear-speedup"]["measured"] == pytest.approx(6.0) and t["causal-linear-speedup"]["status"] == "pass"
    assert t["window-speedup"]["measured"] == pytest.approx(1000 / 60) and t["window-speedup"]["status"] == "pass"
    assert t["window-speedup"]["detail"].startswith("window-gather")  # the faster backend counts
    assert t["exact-softmax-overhead"]["measured"] == pytest.approx(1.1) and t["exact-softmax-overhead"]["status"] == "pass"
    assert t["linear-memory"]["measured"] == pytest.approx(1.0) and t["linear-memory"]["status"] == "pass"
    t = {x["target"]: x for x in evaluate_targets(_rows(lin_causal_ms=150.0, window_ms=120.0, softmax_ms=1300.0,
                                                         quad_peak=True))}
    assert t["causal-linear-speedup"]["measured"] == pytest.approx(4.0) and t["causal-linear-speedup"]["status"] == "FAIL"
    assert t["window-speedup"]["status"] == "FAIL" and t["exact-softmax-overhead"]["status"] == "FAIL"
    assert t["linear-memory"]["measured"] == pytest.approx(2.0) and t["linear-memory"]["status"] == "FAIL"


def test_targets_not_measured_without_n_8192_and_quadratic_memory_ignored():
    rows = [r for r in _rows() if r["n"] != 8192]
    t = {x["target"]: x for x in evaluate_targets(rows)}
    assert [t[k]["status"] for k in ("causal-linear-speedup", "window-speedup", "exact-softmax-overhead")] == [
        "not measured"] * 3
    rows.append(row("unnormalized", 2048, 1.0, peak_mb=1.0, order="quadratic"))
    rows.append(row("unnormalized", 4096, 1.0, peak_mb=100.0, order="quadratic"))  # slope 6.6, not O(n)
    assert t["linear-memory"]["status"] == "pass"
    linear_memory = {x["target"]: x for x in evaluate_targets(rows)}["linear-memory"]
    assert linear_memory["status"] == "pass" and memory_slopes(rows)["unnormalized"] > 6


def test_masked_exact_paths_are_judged_against_their_own_reference():
    rows = []
    for n in (4096, 8192):
        s = n / 8192
        for name, ms, peak, ref, masked in (("sdpa-causal", 600.0, 10.0, "sdpa-causal", False),
                                            ("softmax-causal", 690.0, 10.0, "sdpa-causal", True),
                                            ("softmax-causal-padding", 1000.0, 20.0, "sdpa-causal", True)):
            r = row(name, n, ms * s * s, peak_mb=peak * s, order="quadratic", causal=True)
            rows.append({**r, "reference": ref, "masked": masked, "ratio": ms / 600.0})
    t = {x["target"]: x for x in evaluate_targets(rows)}
    assert t["masked-exact-overhead"]["measured"] == pytest.approx(1000 / 600)
    assert t["masked-exact-overhead"]["status"] == "FAIL"
    assert "softmax-causal 1.15x" in t["masked-exact-overhead"]["detail"]
    assert t["masked-exact-memory"]["measured"] == pytest.approx(1.0) and t["masked-exact-memory"]["status"] == "pass"
