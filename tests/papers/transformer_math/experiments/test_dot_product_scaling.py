"""transformer-math.dot-product-scaling at a tiny config: Var(q.k) = d, the softmax statistics, config errors."""

import math

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.experiments.dot_product_scaling import DotProductConfig, run as run_dot_product_scaling
from tolerances import FLOAT64


def test_dot_product_scaling_tiny(storable):
    cfg = DotProductConfig(dims=(4, 16, 64, 256), n_samples_variance=3000, n_keys=7, n_samples_softmax=40)
    res = run_dot_product_scaling(cfg)
    storable(res)
    v = res.data["variance"]
    # relative standard error sqrt((2 + 6/d)/N) <= 0.034 here; 5 of them is 0.17
    for d, raw, scaled in zip(v["dims"], v["var_raw"], v["var_scaled"]):
        assert raw / d == pytest.approx(1.0, abs=0.17)
        assert scaled == pytest.approx(raw / d, rel=FLOAT64)
    assert res.data["slope"] == pytest.approx(1.0, abs=0.05)
    s = res.data["softmax"]
    assert s["max_prob_raw"][-1] > 0.8 > 0.5 > s["max_prob_scaled"][-1]
    assert s["entropy_raw"][-1] < s["entropy_raw"][0] and s["entropy_scaled"][-1] <= math.log(7)
    assert s["jacobian_norm_raw"][-1] < s["jacobian_norm_scaled"][-1]
    text = res.summary[:4]
    assert [c.verdict for c in text] == ["reproduced"] * 4
    assert all(c.role == "text" and c.where == "§1.2.3" and c.falsifier for c in text)
    assert [c.anchor.split(".")[1] for c in text] == [
        "dot-products-grow", "rescale-dot-products", "largest-input-dominates", "rescale-dot-products"]
    # issue 34: every text row names its deviations, and is decided only because its controls agree
    assert [d.id for d in res.deviations] == ["gaussian-inputs", "jacobian-frobenius"]
    assert [c.deviations for c in text] == [("gaussian-inputs",)] * 3 + [("gaussian-inputs", "jacobian-frobenius")]
    assert all(c.control.startswith("uniform entries") and "another verdict" not in c.control for c in text)
    assert "||J_s^T g||" in text[3].control
    assert res.data["control"]["distribution"] == "uniform" and res.data["control"]["slope"] == pytest.approx(1, abs=0.05)


def test_the_jacobian_row_is_judged_per_query_and_the_mean_is_info():
    """issue 34: "mean ||J|| unscaled / scaled" is another statistic than the text's per-softmax statement; the row
    is the median over queries of the per-query ratio (its quantiles in the detail), the mean an info row."""
    cfg = DotProductConfig(dims=(4, 1024), n_samples_variance=500, n_keys=64, n_samples_softmax=64)
    res = run_dot_product_scaling(cfg)
    row = res.check("median over queries of ||J_s||_F at d=1024")
    q = res.data["per_query"]["jacobian_norm"][-1]
    assert row.measured == q["q50"] and row.relation == "<" and row.threshold == 1
    assert q["q10"] <= q["q25"] <= q["q50"] <= q["q75"] <= q["q90"]
    assert "per-query quantiles 10%" in row.detail and "queries have the smaller Jacobian unscaled" in row.detail
    mean = res.check("mean ||J_s||_F at d=1024")
    assert mean.verdict == "info" and mean.measured == pytest.approx(q["ratio_of_means"])
    assert mean.measured == pytest.approx(res.data["softmax"]["jacobian_norm_raw"][-1]
                                          / res.data["softmax"]["jacobian_norm_scaled"][-1], rel=1e-12)


def test_a_control_with_another_verdict_leaves_the_row_inconclusive():
    """A deviation never decides a verdict: when a control run gives another verdict, the row shows its controls
    and is inconclusive because one disagrees."""
    from attnlab.checks import CONTROL_DISAGREES, NO_ERROR, below
    from attnlab.papers.transformer_math.experiments.dot_product_scaling import _controlled

    kw = dict(anchor="transformer-math.rescale-dot-products", falsifier="f", erratum=NO_ERROR,
              deviations=("gaussian-inputs",))
    row = below(0.1, 1, "main", quantity="ratio", **kw)
    agree, disagree = below(0.2, 1, quantity="ratio", **kw), below(1.5, 1, quantity="ratio", **kw)
    ok = _controlled(row, [("uniform", agree)])
    assert ok.verdict == "reproduced" and ok.control == "uniform: 0.2, required < 1 -> the same verdict"
    bad = _controlled(row, [("uniform", agree), ("gradient", disagree)])
    assert bad.verdict == "inconclusive" and bad.reason == CONTROL_DISAGREES
    assert "gradient: 1.5, required < 1 -> another verdict" in bad.control and bad.detail == "main"


def test_presets_fill_the_config():
    q, p = DotProductConfig(), DotProductConfig(scale="paper")
    assert q.dims == p.dims == (4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert q.n_samples_variance < p.n_samples_variance


@pytest.mark.parametrize("make, message", [
    (lambda: DotProductConfig(dims=(8, 8)), "at least two different dimensions"),
    (lambda: DotProductConfig(dims=(0, 4)), "dims must be"),
    (lambda: DotProductConfig(n_keys=1), "n_keys must be"),
    (lambda: DotProductConfig(slope_tolerance=0), r"slope_tolerance must be a finite number in \(0, inf\)"),
    (lambda: DotProductConfig(seed=-1), r"seed must be an integer in \[0, 4294967295\]"),
    (lambda: DotProductConfig(control_distribution="gaussian"), "control_distribution must be one of uniform"),
    (lambda: DotProductConfig(control_samples_softmax=0), "control_samples_softmax must be"),
    (lambda: DotProductConfig(device="tpu"), "unknown device 'tpu'; use cpu, cuda or cuda:N"),
])
def test_config_errors(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


def test_configs_are_frozen():
    with pytest.raises(Exception):
        DotProductConfig().n_keys = 3
