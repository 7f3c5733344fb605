"""transformer-math.softmax-saturation at a tiny config: the curves, the checks, config errors."""

import math

import pytest

from attnlab.checks import CONTROL_DISAGREES
from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.experiments.softmax_saturation import (
    SaturationConfig,
    _summary,
    run as run_softmax_saturation,
)
from attnlab.runs.rundir import RunDir


def test_softmax_saturation_tiny(tmp_path, storable):
    rd = RunDir.create(tmp_path / "run")
    cfg = SaturationConfig(n_values=(3, 7), n_samples=31, n_scales=11, t_min=1e-2, t_max=1e3)
    res = run_softmax_saturation(cfg, rd)
    storable(res)
    scales = res.data["scales"]
    assert len(scales) == 11 and scales[0] == pytest.approx(1e-2) and scales[-1] == pytest.approx(1e3)
    for n in (3, 7):
        c = res.data["curves"][str(n)]
        # t -> 0: uniform softmax, ||J||_F = sqrt(n-1)/n, deviation O(t^2)
        assert c["jacobian_norm"][0] == pytest.approx(math.sqrt(n - 1) / n, rel=1e-3)
        assert c["max_prob"][0] == pytest.approx(1 / n, rel=0.05)
        late = [i for i, t in enumerate(scales) if t >= 10]
        for key in ("jacobian_norm", "gradient_norm"):
            ys = [c[key][i] for i in late]
            assert all(b < a for a, b in zip(ys, ys[1:])), (n, key, ys)
        assert c["max_prob"][-1] > 0.95
        assert c["jacobian_norm"][-1] == pytest.approx(c["one_hot_limit"][-1], rel=1e-6)
    assert {c.verdict for c in res.summary} == {"reproduced", "sanity"}
    assert {c.anchor for c in res.summary if c.verdict == "reproduced"} == {"transformer-math.large-inputs-saturate"}
    assert [m["n"] for m in rd.read_metrics()] == [3, 7]  # the control run streams nothing
    # issue 34: the text rows name the deviations (Gaussian logits, the Frobenius norm) and are decided because
    # both controls (uniform logits, the gradient at the logits) give their verdict: 0 increases past t = 10
    assert [d.id for d in res.deviations] == ["gaussian-logits", "jacobian-frobenius"]
    for c in (c for c in res.summary if c.role == "text"):
        assert c.deviations == ("gaussian-logits", "jacobian-frobenius") and c.values["controls"]
        assert set(c.values["controls"].values()) == {0} and c.control.count("the same verdict") == 2
    assert res.data["control"]["samples"] == 31 and set(res.data["control"]["curves"]) == {"3", "7"}


def test_presets_fill_the_config():
    assert SaturationConfig().n_values == (3, 11, 64)
    assert SaturationConfig(scale="paper").n_samples == 4000
    assert SaturationConfig(n_samples=5).n_samples == 5  # explicit values win over the preset



def test_a_control_that_disagrees_leaves_the_row_inconclusive_and_says_so():
    """The main run's curve falls past t = 10 while the uniform control's rises once: the control was run, its
    verdict is shown, and the row is inconclusive because the control disagrees (not for want of a control)."""
    ts = [1.0, 10.0, 100.0, 1000.0]
    falling, rising = [0.5, 0.3, 0.1, 0.01], [0.5, 0.3, 0.1, 0.2]
    curve = {"jacobian_norm": falling, "gradient_norm": falling, "one_hot_limit": [0.01] * 4,
             "uniform_limit": 0.5, "max_prob": [0.5, 0.9, 0.99, 0.999]}
    row = _summary(ts, {5: curve}, {5: {"jacobian_norm": rising}}, SaturationConfig(control_samples=8))[0]
    assert row.measured == 0 and row.verdict == "inconclusive"
    assert row.control.startswith("uniform logits, 8 draws: 1 increases -> another verdict")
    assert row.reason == CONTROL_DISAGREES == "its control without the deviations gives another verdict"
    agreeing = _summary(ts, {5: curve}, {5: {"jacobian_norm": falling}}, SaturationConfig(control_samples=8))[0]
    assert agreeing.verdict == "reproduced" and agreeing.reason == ""


@pytest.mark.parametrize("make, message", [
    (lambda: SaturationConfig(scale="huge"), "scale must be one of quick, paper"),
    (lambda: SaturationConfig(n_values=(1, 3)), "n_values must be a non-empty list of integers >= 2"),
    (lambda: SaturationConfig(t_min=10.0, t_max=1.0), "need 0 < t_min < t_max"),
    (lambda: SaturationConfig(n_scales=1), "n_scales must be"),
    (lambda: SaturationConfig(control_distribution="normal"), "control_distribution must be one of uniform"),
])
def test_config_errors(make, message):
    with pytest.raises(ConfigError, match=message):
        make()
