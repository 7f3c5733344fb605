"""invertibility.conditioning at a tiny config: certified ranks where the theorem holds and fails,
labelled sigma_min below float resolution, determinism, bad configs."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.experiments.conditioning import EXPERIMENT_ID, ConditioningConfig, run
from attnlab.registry import get_experiment

TINY = dict(w_cases=("2:3:2",), w_values=(0.1, 1.0, 30.0), size_cases=("2:2:2", "2:3:3"), size_w=(1.0,),
            head_cases=("2:3:2",), extra_heads=1, dim_cases=("2:3", "3:2"), dims_beyond=2, hp_max_rows=16,
            certify_max_rows=16)


@pytest.fixture(scope="module")
def result():
    return run(ConditioningConfig(**TINY))


def test_registered():
    exp = get_experiment(EXPERIMENT_ID)
    assert exp.config_cls is ConditioningConfig and exp.cpu_only


def test_ranks(result, storable):
    storable(result)
    d = result.data
    for r in d["w"]:  # (2,3,2), P = 4: certified rank N^L = 8 at every w
        assert (r["rows"], r["P"], r["cert_lower"], r["cert_upper"]) == (8, 4, 8, 8)
    dims = {(r["N"], r["d"]): r for r in d["dims"]}  # (2, 3): N + L - 2 = 3, full rank up to d = 3, 1 + P*3 = 7 beyond
    assert [dims[2, k]["cert_lower"] for k in range(1, 6)] == [8, 8, 8, 7, 7]
    # (3, 2): N + L - 2 = 3; d = 4 has P = 3 and cap 1 + 3*3 = 10 >= 9: full rank beyond N + L - 2; d = 5, P = 2: 7
    assert [(dims[3, k]["P"], dims[3, k]["cert_lower"]) for k in range(1, 6)] == [(9, 9), (5, 9), (3, 9), (3, 9),
                                                                                  (2, 7)]
    assert all(r["cols"] >= r["rows"] for r in dims.values())  # Pd >= N^L throughout
    heads = {r["P"]: r for r in d["heads"]}
    assert [heads[P]["cert_lower"] for P in (1, 2, 3, 4, 5)] == [2, 4, 6, 8, 8]
    ok = result.check("Theorem 1 where the rank cap allows it")
    assert ok.verdict == "reproduced" and ok.measured == ok.threshold == 14 and "(3,2,4,3)" in ok.detail
    assert ok.anchor == "invertibility.theorem-1" and ok.falsifier
    capped = result.check("Theorem 1 where 1 + P (N+L-2) < N^L")  # the text's Pd >= N^L is not enough there
    assert capped.verdict == "differs" and (capped.measured, capped.threshold) == (0, 3)
    # the same error as the claims positional-cap and minimal-heads: the cap's record, one finding
    assert (capped.anchor, capped.erratum) == ("invertibility.theorem-1", "invertibility.cap-below-n-to-the-l")
    # reaching min(N^L, Pd, 1 + P (N+L-2)) is attnlab's conjecture, not the text's (was construction -> reproduced)
    at_cap = result.check("cases whose certified rank reaches the rank cap")
    assert (at_cap.role, at_cap.verdict, at_cap.anchor, at_cap.group) == ("own", "holds", "", "own")


def test_sigma_min_labels(result):
    rows = {r["w"]: r for r in result.data["w"]}
    assert rows[1.0]["float_resolved"] and rows[1.0]["hp_log10_ratio"] == pytest.approx(
        rows[1.0]["float_log10_ratio"], abs=1e-6)
    big = rows[30.0]  # saturated softmax: float64 sees round-off, the high-precision value is far lower
    assert not big["float_resolved"] and big["hp_log10_ratio"] < big["resolution_log10"] - 2
    assert big["float_rank"] < 8 == big["cert_lower"]
    best = result.data["w_summary"][0]
    assert best["best_w"] == 1.0 and best["w_star"] == pytest.approx(4.649, abs=1e-3)
    assert result.check("best w and resolvable w range").measured.startswith("best w = 1 (")  # inside the grid
    assert {f.file for f in result.figures} == {"inv-sigma-min-vs-w.png", "inv-sigma-ratio-vs-rows.png",
                                                "inv-sigma-ratio-vs-heads.png", "inv-rank-vs-d.png"}


def test_empty_sweeps_are_not_judged():
    res = run(ConditioningConfig(**{**TINY, "w_values": (1.0,), "dims_beyond": 0, "certify_max_rows": 4}))
    assert res.check("Theorem 1 where 1 + P (N+L-2) < N^L").verdict == "info"  # no capped case
    assert res.check("Theorem 1 where the rank cap allows it").verdict == "reproduced"  # (2,2,2): N^L = 4
    assert res.verdicts["fail"] == 0 and res.verdicts["differs"] == 0


def test_a_censored_point_is_not_fitted():
    # (2,6,6) at w = 1 is below float64 resolution and hp_max_rows = 16 leaves it uncomputed: no slope
    res = run(ConditioningConfig(**{**TINY, "size_cases": ("2:2:2", "2:3:3", "2:6:6"), "certify_max_rows": 4}))
    fit = res.check("log10 sigma_min/sigma_max against log10 N^L")
    assert fit.verdict == "info" and fit.measured == "not fitted" and "N^L=64: <= " in fit.detail


def test_deterministic(result):
    again = run(ConditioningConfig(**TINY))
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    for key in ("w", "size", "heads", "dims"):
        assert strip(again.data[key]) == strip(result.data[key])


@pytest.mark.parametrize("changes, message", [
    (dict(w_cases=("2:3",)), "must be N:L:d"),
    (dict(w_cases=("2:x:2",)), "is not N:L:d with integers"),
    (dict(w_cases=("2:13:2",)), "more than 4096"),
    (dict(size_cases=("2:3:4",)), "d > N \\+ L - 2"),
    (dict(w_values=(0.0,)), "every entry of w_values must be"),
    (dict(dim_cases=()), "at least one case"),
    (dict(hp_max_rows=5000), "hp_max_rows must be"),
    (dict(embedding="trained"), "embedding must be one of"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        ConditioningConfig(**changes)


def test_device_validated():
    if torch.cuda.is_available():
        assert ConditioningConfig(device="cuda").device == "cuda"
    else:
        with pytest.raises(ConfigError, match="CUDA is not available"):
            ConditioningConfig(device="cuda")
    with pytest.raises(ConfigError, match="unknown device"):
        ConditioningConfig(device="tpu")
