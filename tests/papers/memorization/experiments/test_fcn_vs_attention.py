"""memorization.fcn-vs-attention: a tiny run's numbers, the preset, bad configs (Python and CLI)."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.papers.memorization.experiments.fcn_vs_attention import (
    EXPERIMENT_ID,
    FCNvsAttentionConfig,
    run as run_fcn_vs_attention,
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


def test_tiny_run(tmp_path, storable):
    rd = RunDir.create(tmp_path / "run")
    res = run_fcn_vs_attention(FCNvsAttentionConfig(**TINY), rd)
    assert set(res.to_dict()) == {"summary", "tables", "figures", "notes", "data", "deviations"}
    assert res.deviations == []  # Proposition 3 is about every weight set: no protocol of the text to depart from
    storable(res)
    data = res.data
    assert (data["m"], data["P_attention"], data["P_fcn"]) == (3, 65, 52)
    assert (data["proposition3_bound"], data["homogeneity_bound"], data["theorem1_bound"]) == (13, 10, 3)
    small, big = data["cells"]
    assert small["T"] == 3 and small["fcn_residual"] <= 1e-8 and small["attention_residual"] <= 1e-8
    assert big["T"] == 30 and big["fcn_residual"] >= 1e-2  # above Proposition 3's bound
    level = data["memorized_level"]  # the widest gap lies between the fits at T = 3 and the failed FCN at T = 30
    assert max(small["fcn_residual"], small["attention_residual"]) <= level["level"] < 1e-2 <= big["fcn_residual"]
    assert data["largest_T_memorized"]["fcn"] == 3
    assert data["neighbours"]["fcn"] == {"T": 3, "residual": small["fcn_residual"], "next_T": 30,
                                         "next_residual": big["fcn_residual"]}
    fcn, attention, level_row, _ = res.summary
    # the FCN's T* is what training found within its budget: a lower bound of what the network memorizes
    # (T = 30 failed, which shows no such thing about every weight set), so T* >= 3 cannot decide
    # Proposition 3's T <= 13 (was reproduced on T* = 3 read as exact); only T* > 13 could differ
    assert (fcn.anchor, fcn.role, fcn.verdict) == ("memorization.proposition-3", "text", "inconclusive")
    assert fcn.measured_text == ">= 3" and fcn.threshold == 13 and "T=30 was not memorized" in fcn.reason
    assert "next grid T = 30: residual" in fcn.detail  # T* is reported with its neighbour
    # the attention layer reaching Theorem 1's existence bound is attnlab's own statement (was reproduced)
    assert (attention.anchor, attention.role) == ("", "own")
    assert level_row.verdict == "info" and level_row.measured == level["level"]
    assert [row.verdict for row in res.summary[2:]] == ["info", "info"]
    assert res.figures[0].yscale == "log" and res.figures[0].series[2].x == [13, 13]
    assert len(res.tables[0].rows) == 2 and len(rd.read_metrics()) == 2


def _paper_cells():
    """The best residuals of the committed paper-scale run (results/paper-scale/memorization), T = 64 ... 768."""
    from attnlab.papers.memorization.experiments.fcn_vs_attention import FitCell

    fcn = [5.58e-10, 2.48e-9, 1.28e-8, 8.52e-7, 0.1269, 0.3127, 0.3627]
    att = [1.55e-9, 1.91e-9, 4.49e-9, 5.24e-9, 1.66e-8, 9.24e-9, 1.25e-8]
    return [FitCell(T, f, a, [f], [a]) for T, f, a in zip((64, 125, 250, 375, 511, 640, 768), fcn, att)]


def test_the_text_size_rows_report_t_star_with_its_neighbours_and_a_bound_at_the_top():
    """Issue 34: with the level in the residuals' gap (9.2e-5), the FCN breaks between T = 375 (8.5e-7) and
    T = 511 (0.127), next to the bound 496 (was T* = 125 at 1e-8), and the attention layer memorizes the whole
    grid: T* >= 768, a lower bound at the grid's top (was 640, an artefact of 1e-8 against 1.7e-8 at 511)."""
    from attnlab.papers.memorization.experiments.fcn_vs_attention import _summary, largest, memorization_level

    cfg = FCNvsAttentionConfig(scale="paper")
    cells = _paper_cells()
    level = memorization_level(cells)
    assert 8.52e-7 < level.level < 0.1269 and level.level == pytest.approx(9.23e-5, rel=1e-2)
    best = {"fcn": largest(cells, lambda c: c.fcn_residual, level),
            "attention": largest(cells, lambda c: c.attention_residual, level)}
    assert (best["fcn"].T, best["fcn"].next_T, best["fcn"].next_residual) == (375, 511, 0.1269)
    assert (best["attention"].T, best["attention"].next_T) == (768, None)
    sizes = {"m": 15, "P_fcn": 31711, "P_attention": 33344, "proposition3_bound": 511.0, "homogeneity_bound": 496.0,
             "theorem1_bound": 125}
    fcn, attention, level_row, _ = _summary(cfg, sizes, best, level)
    # a lower bound 375 below Proposition 3's 511 cannot decide an upper bound
    assert (fcn.measured_text, fcn.verdict) == (">= 375", "inconclusive")
    assert "T=511 was not memorized within the training budget (residual 0.13)" in fcn.reason
    assert "T* = 375 (residual 8.5e-07); next grid T = 511: residual 0.13" in fcn.detail
    assert fcn.values["homogeneity_bound"] == 496.0
    # the top of the grid memorized: a lower bound, which still decides T* >= 125 (attnlab's own statement)
    assert (attention.measured_text, attention.verdict) == (">= 768", "holds")
    assert "the top of the grid" in attention.detail
    assert level_row.values["decades"] == pytest.approx(4.07, abs=0.01)


@pytest.mark.parametrize("bad, message", [
    (dict(n=6, d=6), "the paper needs n < d"),
    (dict(T_grid=(1, 5)), "T_grid must be a non-empty list of integers >= 2"),
    (dict(restarts=0), "restarts must be an integer >= 1"),
    (dict(H=1, d=8, n=4, d_h=1), "fewer than an FCN with one hidden unit"),
    # without CUDA the framework refuses "cuda"; with it, the experiment runs on the CPU (test below)
    pytest.param(dict(device="cuda"), "CUDA is not available on this machine; use cpu",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal without CUDA")),
    (dict(scale="huge"), "scale must be one of"),
])
def test_bad_config(bad, message):
    with pytest.raises(ConfigError, match=message):
        FCNvsAttentionConfig(**bad)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_run_trains_it_on_the_cpu():
    assert FCNvsAttentionConfig(device="cuda").device == "cuda"  # accepted, not refused
    device, note = get_experiment(EXPERIMENT_ID).run_device("cuda")
    assert device == "cpu" and note.startswith("Ran on the CPU inside a cuda run: Proposition 3's networks")


def test_bad_config_via_the_cli(cli_error, tmp_path):
    argv = ["sweep", EXPERIMENT_ID, "--set", "n=9", "--out", str(tmp_path / "s")]
    assert "the paper needs n < d" in cli_error(argv)


def test_a_trained_fcn_beyond_the_bound_would_differ():
    """The FCN row can differ: memorizing weights found above Proposition 3's bound refute it."""
    from attnlab.papers.memorization.experiments.fcn_vs_attention import _summary

    from attnlab.papers.memorization.experiments.fcn_vs_attention import LargestT
    from attnlab.papers.memorization.residual_gap import gap_threshold

    cfg = FCNvsAttentionConfig(**TINY)
    sizes = {"m": 3, "P_fcn": 52, "P_attention": 65, "proposition3_bound": 13, "homogeneity_bound": 10,
             "theorem1_bound": 3}
    level = gap_threshold([1e-10, 1e-9, 0.2])
    best = {"fcn": LargestT(30, 1e-10, None, None), "attention": LargestT(3, 1e-9, 30, 0.2)}
    fcn, attention = _summary(cfg, sizes, best, level)[:2]
    assert (fcn.measured_text, fcn.verdict) == (">= 30", "differs")
    assert (attention.measured, attention.verdict) == (3, "holds")
    # residuals with no clear gap say nothing about which T were memorized: both rows inconclusive
    blurred = gap_threshold([10.0 ** -k for k in range(2, 13)])
    assert [r.verdict for r in _summary(cfg, sizes, best, blurred)[:2]] == ["inconclusive", "inconclusive"]
