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
    fcn, attention, _ = res.summary
    # the FCN's T* is what training found within its budget: a lower bound of what the network memorizes
    # (T = 30 failed, which shows no such thing about every weight set), so T* >= 3 cannot decide
    # Proposition 3's T <= 13 (was reproduced on T* = 3 read as exact); only T* > 13 could differ
    assert (fcn.anchor, fcn.role, fcn.verdict) == ("memorization.proposition-3", "text", "inconclusive")
    assert fcn.measured_text == ">= 3" and fcn.threshold == 13 and "T=30 was not memorized" in fcn.reason
    # the attention layer reaching Theorem 1's existence bound is attnlab's own statement (was reproduced)
    assert (attention.anchor, attention.role, attention.verdict) == ("", "own", "holds")
    assert [row.verdict for row in res.summary] == ["inconclusive", "holds", "info"]
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


def test_a_trained_fcn_beyond_the_bound_would_differ():
    """The FCN row can differ: memorizing weights found above Proposition 3's bound refute it."""
    from attnlab.papers.memorization.experiments.fcn_vs_attention import _summary

    cfg = FCNvsAttentionConfig(**TINY)
    sizes = {"m": 3, "P_fcn": 52, "P_attention": 65, "proposition3_bound": 13, "homogeneity_bound": 10,
             "theorem1_bound": 3}
    fcn = _summary(cfg, sizes, {"fcn": 30, "attention": 3})[0]
    assert (fcn.measured_text, fcn.verdict) == (">= 30", "differs")
