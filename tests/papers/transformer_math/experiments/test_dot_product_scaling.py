"""transformer-math.dot-product-scaling at a tiny config: Var(q.k) = d, the softmax statistics, config errors."""

import math

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.experiments.dot_product_scaling import DotProductConfig, run_dot_product_scaling
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
    assert [c.verdict for c in res.summary] == ["reproduced"] * 4
    assert all(c.role == "text" and c.where == "§1.2.3" and c.falsifier for c in res.summary)
    assert [c.anchor.split(".")[1] for c in res.summary] == [
        "dot-products-grow", "rescale-dot-products", "largest-input-dominates", "rescale-dot-products"]


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
    (lambda: DotProductConfig(device="tpu"), "unknown device 'tpu'; use cpu, cuda or cuda:N"),
])
def test_config_errors(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


def test_configs_are_frozen():
    with pytest.raises(Exception):
        DotProductConfig().n_keys = 3
