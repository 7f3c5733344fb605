"""transformer-math experiments at tiny configs: keys, sensible numbers, config errors."""

from __future__ import annotations

import json
import math

import pytest

from attnlab.errors import ConfigError
from attnlab.registry import all_experiments
from attnlab.experiments.transformer_math import (
    DotProductConfig,
    ParameterCountsConfig,
    SaturationConfig,
    run_dot_product_scaling,
    run_parameter_counts,
    run_softmax_saturation,
)
from attnlab.runs.rundir import RunDir

IDS = {"transformer-math.parameter-counts", "transformer-math.softmax-saturation",
       "transformer-math.dot-product-scaling"}


def _check_shape(res):
    json.dumps(res, allow_nan=False)  # JSON-able as stored
    assert set(res) >= {"summary", "figures", "data"}
    for row in res["summary"]:
        assert set(row) >= {"quantity", "paper_value", "measured", "expected", "status"}
        assert row["status"] in ("pass", "FAIL", "info")
    assert len({f["file"] for f in res["figures"]}) == len(res["figures"])


def test_registered():
    assert IDS <= {e.id for e in all_experiments()}


def test_parameter_counts():
    res = run_parameter_counts(ParameterCountsConfig())
    _check_shape(res)
    rows = {r["model"]: r for r in res["data"]["rows"]}
    assert list(rows) == ["GPT-1", "BERT", "GPT-2", "GPT-3", "LaMDA", "Minerva"]
    assert rows["GPT-1"]["paper_value"] == 117e6 and rows["GPT-3"]["paper_value"] == 175e9
    for r in res["summary"]:
        assert r["status"] in ("pass", "info")  # every row with hyper-parameters within 5%
    for r in rows.values():
        if r["computed"] is not None:
            assert r["rel_error"] == pytest.approx(abs(r["computed"] - r["paper_value"]) / r["paper_value"])
    assert res["tables"][0]["columns"][:4] == ["model", "release", "paper", "computed"]


def test_softmax_saturation_tiny(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    cfg = SaturationConfig(n_values=(3, 7), n_samples=31, n_scales=11, t_min=1e-2, t_max=1e3)
    res = run_softmax_saturation(cfg, rd)
    _check_shape(res)
    scales = res["data"]["scales"]
    assert len(scales) == 11 and scales[0] == pytest.approx(1e-2) and scales[-1] == pytest.approx(1e3)
    for n in (3, 7):
        c = res["data"]["curves"][str(n)]
        # t -> 0: uniform softmax, ||J||_F = sqrt(n-1)/n, deviation O(t^2)
        assert c["jacobian_norm"][0] == pytest.approx(math.sqrt(n - 1) / n, rel=1e-3)
        assert c["max_prob"][0] == pytest.approx(1 / n, rel=0.05)
        late = [i for i, t in enumerate(scales) if t >= 10]
        for key in ("jacobian_norm", "gradient_norm"):
            ys = [c[key][i] for i in late]
            assert all(b < a for a, b in zip(ys, ys[1:])), (n, key, ys)
        assert c["max_prob"][-1] > 0.95
        assert c["jacobian_norm"][-1] == pytest.approx(c["one_hot_limit"][-1], rel=1e-6)
    assert all(r["status"] == "pass" for r in res["summary"])
    assert [m["n"] for m in rd.read_metrics()] == [3, 7]


def test_dot_product_scaling_tiny():
    cfg = DotProductConfig(dims=(4, 16, 64, 256), n_samples_variance=3000, n_keys=7, n_samples_softmax=40)
    res = run_dot_product_scaling(cfg)
    _check_shape(res)
    v = res["data"]["variance"]
    # relative standard error sqrt((2 + 6/d)/N) <= 0.034 here; 5 of them is 0.17
    for d, raw, scaled in zip(v["dims"], v["var_raw"], v["var_scaled"]):
        assert raw / d == pytest.approx(1.0, abs=0.17)
        assert scaled == pytest.approx(raw / d, rel=1e-12)
    assert res["data"]["slope"] == pytest.approx(1.0, abs=0.05)
    s = res["data"]["softmax"]
    assert s["max_prob_raw"][-1] > 0.8 > 0.5 > s["max_prob_scaled"][-1]
    assert s["entropy_raw"][-1] < s["entropy_raw"][0] and s["entropy_scaled"][-1] <= math.log(7)
    assert s["jacobian_norm_raw"][-1] < s["jacobian_norm_scaled"][-1]
    assert [r["status"] for r in res["summary"]] == ["pass"] * 4


def test_presets_fill_the_config():
    q, p = DotProductConfig(), DotProductConfig(scale="paper")
    assert q.dims == p.dims == (4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert q.n_samples_variance < p.n_samples_variance
    assert SaturationConfig(n_samples=5).n_samples == 5  # explicit values win over the preset


@pytest.mark.parametrize("make, message", [
    (lambda: SaturationConfig(scale="huge"), "scale must be one of quick, paper"),
    (lambda: SaturationConfig(n_values=(1, 3)), "n_values must be a non-empty list of integers >= 2"),
    (lambda: SaturationConfig(t_min=10.0, t_max=1.0), "need 0 < t_min < t_max"),
    (lambda: SaturationConfig(n_scales=1), "n_scales must be"),
    (lambda: DotProductConfig(dims=(8, 8)), "at least two different dimensions"),
    (lambda: DotProductConfig(dims=(0, 4)), "dims must be"),
    (lambda: DotProductConfig(n_keys=1), "n_keys must be"),
    (lambda: DotProductConfig(slope_tolerance=0), "must be positive"),
    (lambda: DotProductConfig(seed=-1), "seed must be a non-negative integer"),
    (lambda: DotProductConfig(device="tpu"), "device must be 'cpu' or 'cuda'"),
    (lambda: ParameterCountsConfig(rel_tol=2.0), r"rel_tol must be in \(0, 1\)"),
])
def test_config_errors(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


def test_configs_are_frozen():
    with pytest.raises(Exception):
        DotProductConfig().n_keys = 3
