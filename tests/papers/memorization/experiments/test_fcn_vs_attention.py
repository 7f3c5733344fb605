"""memorization.fcn-vs-attention: a tiny run's numbers, the preset, bad configs (Python and CLI)."""

from __future__ import annotations

import pytest

from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.papers.memorization.experiments.fcn_vs_attention import (
    EXPERIMENT_ID,
    FCNvsAttentionConfig,
    run_fcn_vs_attention,
)
from attnlab.runs.rundir import RunDir

# attention: 2*2*5*2 + 2*5 + 2*5 + 5 = 65 parameters -> m = 3 (17 m + 1 <= 65); Prop. 3: 3*3+3+1 = 13
TINY = dict(H=2, d=5, n=2, d_h=2, T_grid=(3, 30), restarts=2, steps=2)


def test_registered_and_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is FCNvsAttentionConfig
    cfg = FCNvsAttentionConfig()
    assert (cfg.H, cfg.d, cfg.n, cfg.d_h, cfg.m) == (4, 6, 3, 3, 7)
    paper = FCNvsAttentionConfig(scale="paper")
    assert (paper.d, paper.n, paper.m) == (64, 32, 15)  # 33344 attention parameters; 2114 per hidden unit


def test_tiny_run(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    res = run_fcn_vs_attention(FCNvsAttentionConfig(**TINY), rd)
    assert set(res.to_dict()) == {"summary", "tables", "figures", "notes", "data"}
    data = res.data
    assert (data["m"], data["P_attention"], data["P_fcn"]) == (3, 65, 52)
    assert (data["proposition3_bound"], data["homogeneity_bound"], data["theorem1_bound"]) == (13, 10, 3)
    small, big = data["cells"]
    assert small["T"] == 3 and small["fcn_residual"] <= 1e-8 and small["attention_residual"] <= 1e-8
    assert big["T"] == 30 and big["fcn_residual"] >= 1e-2  # above Proposition 3's bound
    assert data["largest_T_memorized"]["fcn"] == 3
    assert [row.verdict for row in res.summary] == ["reproduced", "reproduced", "info"]
    assert res.summary[0].measured == 3 and res.summary[0].threshold == 13  # T* = 3 <= (n+1)m/d_out+m+1
    assert res.figures[0].yscale == "log" and res.figures[0].series[2].x == [13, 13]
    assert len(res.tables[0].rows) == 2 and len(rd.read_metrics()) == 2


@pytest.mark.parametrize("bad, message", [
    (dict(n=6, d=6), "the paper needs n < d"),
    (dict(T_grid=(1, 5)), "T_grid must be a non-empty list of integers >= 2"),
    (dict(restarts=0), "restarts must be an integer >= 1"),
    (dict(H=1, d=8, n=4, d_h=1), "fewer than an FCN with one hidden unit"),
    # without CUDA the framework refuses "cuda" first; with it, the experiment does (CPU only)
    (dict(device="cuda"), "use (device 'cpu'|cpu)"),
    (dict(scale="huge"), "scale must be one of"),
])
def test_bad_config(bad, message):
    with pytest.raises(ConfigError, match=message):
        FCNvsAttentionConfig(**bad)


def test_bad_config_via_the_cli(cli_error, tmp_path):
    argv = ["sweep", EXPERIMENT_ID, "--set", "n=9", "--out", str(tmp_path / "s")]
    assert "the paper needs n < d" in cli_error(argv)
