"""rank-collapse.bound at a tiny config: the bound never below the measurement, the 3^L fit (the fit and the
bound themselves: test_doubly_exponential.py, test_bound_measure.py)."""

import math

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.rank_collapse.experiments.bound import BoundConfig, run
from tolerances import FLOAT64


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
