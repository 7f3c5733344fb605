"""rank-collapse.bound at a tiny config: the bound never below the measurement, the 3^L fit."""

import math

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.rank_collapse.experiments.bound import FLOOR, BoundConfig, fit_doubly_exponential, log10_bound, run
from tolerances import FLOAT64, FLOAT64_LONG


def test_log10_bound_matches_the_formula():
    beta, d, r = 0.3, 4, 0.5
    for L in (1, 2, 3):
        direct = (4 * beta / math.sqrt(d)) ** ((3**L - 1) / 2) * r ** (3**L)
        assert log10_bound(L, beta, d, r) == pytest.approx(math.log10(direct), rel=FLOAT64)
    assert log10_bound(1, beta, d, r, heads=12) == pytest.approx(math.log10(4 * 12 * beta / 2 * r**3), rel=FLOAT64)


def test_fit_recovers_doubly_exponential_and_exponential_decay():
    f = fit_doubly_exponential([10.0 ** (-0.5 * 3**l) for l in range(4)])
    assert f.triple_slope == pytest.approx(-0.5, rel=FLOAT64_LONG)
    assert f.triple_r2 == pytest.approx(1, abs=FLOAT64)
    assert f.linear_r2 < 0.95
    g = fit_doubly_exponential([10.0 ** (-2 * l) for l in range(5)])
    assert g.linear_slope == pytest.approx(-2, rel=FLOAT64_LONG) and g.linear_r2 > g.triple_r2
    assert fit_doubly_exponential([1.0, 1e-20, 1e-30]).points == 1  # rounding-level points are dropped
    assert FLOOR == 1e-13


def test_bound_tiny(storable):
    res = run(BoundConfig(weight_scales=(0.25, 1.0), input_residuals=(0.05, 1.0), draws=2, layers=3,
                          minilm_tokens=8, minilm_texts=1))
    storable(res)
    for p in res.data["points"]:
        for b, m, ok in zip(p["log10_bound"], p["log10_measured"], p["resolved"]):
            if ok:
                assert m <= b + 1e-9  # the measured residual is never above the bound
        assert p["kappa"] == pytest.approx(4 * p["beta"] * p["res0"] ** 2 / 2, rel=FLOAT64)
    assert res.summary[0].verdict == "reproduced" and res.summary[0].measured == 0
    assert res.summary[0].anchor == "rank-collapse.theorem-2-2" and res.summary[0].falsifier
    # the bound takes the exact composite residual of X, not the notes' token mean (a deviation, declared with why):
    # decided with its control, the same pairs under the bound from the notes' residual r_0
    row = res.summary[0]
    assert [d.id for d in res.deviations] == ["composite-input-residual"] and res.deviations[0].why
    assert row.deviations == ("composite-input-residual",) and row.values["violations_notes_residual"] == 0
    assert row.control.startswith("the bound from the notes' residual") and row.control.endswith("-> reproduced")
    # the notes state a bound, not a rate: the 3^l-fit rows are attnlab's own statements (issue 33)
    assert [c.group for c in res.summary if c.verdict != "info"] == ["text"] + ["own"] * (
        sum(c.verdict != "info" for c in res.summary) - 1)
    assert all(c.verdict in ("reproduced", "differs", "holds", "refuted", "inconclusive", "info")
               for c in res.summary)
    mini = res.data["minilm"]["pretrained"]
    assert mini["log10_bound"][0] > math.log10(mini["res0"])  # vacuous for the trained model
    again = run(BoundConfig(weight_scales=(0.25, 1.0), input_residuals=(0.05, 1.0), draws=2, layers=3,
                            minilm_tokens=8, minilm_texts=1))
    assert again.data["points"] == res.data["points"]


@pytest.mark.parametrize("changes, message", [
    (dict(weight_scales=(0.0,)), "every entry of weight_scales must be"),
    (dict(input_residuals=()), "input_residuals must list"),
    (dict(layers=13), "layers must be an integer in"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        BoundConfig(**changes)
