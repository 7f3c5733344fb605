"""Fig. 2(b), 2(c), 4 and 5 experiments: presets, derived rows, tiny runs, bad configs (Python and CLI)."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.cli import main
from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.papers.memorization.experiments.capacity_vs_heads import CapacityConfig
from attnlab.papers.memorization.capacity_cells import AUTHORS_PROTOCOL
from attnlab.papers.memorization.experiments.capacity_vs_context import ContextConfig, run_context
from attnlab.papers.memorization.experiments.general_position import (
    GeneralPositionConfig,
    run_general_position,
)
from attnlab.papers.memorization.experiments.capacity_vs_head_size import (
    HeadSizeConfig,
    flat_beyond_n,
)
from attnlab.papers.memorization.experiments.regression import (
    RegressionConfig,
    run_regression,
)
from attnlab.papers.memorization.capacity_report import monotone_row, panel

IDS = {"memorization.capacity-vs-context": ContextConfig, "memorization.capacity-vs-head-size": HeadSizeConfig,
       "memorization.regression": RegressionConfig, "memorization.general-position": GeneralPositionConfig}
# tiny: d = 8, T a small multiple of the bound, few steps; every cell trains in about a second
TRAIN = dict(d=8, n=4, steps=150, lr=2e-2, warmup=10, replicates=2, eval_every=10)


def test_registered_with_paper_presets():
    for id, cls in IDS.items():
        e = get_experiment(id)
        assert e.config_cls is cls and e.in_reproduce
        paper = cls(scale="paper")
        # App. A: Adam 1e-3, batch 256, >= 50k steps, >= 500 epochs
        assert (paper.optimizer, paper.lr, paper.batch, paper.min_epochs) == ("adam", 1e-3, 256, 500)
        assert paper.steps >= 50_000 and paper.d == 64
    assert ContextConfig(scale="paper").H == 20 and ContextConfig().H == 4  # §5.2: H = 20
    assert HeadSizeConfig(scale="paper").steps == 300_000  # App. A: Fig. 2(c) trains 300k steps
    assert CapacityConfig(scale="paper").steps == AUTHORS_PROTOCOL["steps"]
    assert ContextConfig().T_grid(4, 8, 64) == [29, 58, 116, 232]  # f (4 (8 - 1) + 1)


def test_steps_follow_the_500_epoch_rule():
    paper = CapacityConfig(scale="paper")  # batch 256, >= 50k steps and >= 500 epochs
    assert paper.steps_for(1_000) == 50_000
    assert paper.steps_for(100_000) == math.ceil(500 * 100_000 / 256) == 195_313
    assert paper.steps_for(200) == 50_000  # T <= batch: full batch, the step count as set


def test_lbfgs_preset_and_full_batch_only():
    cfg = ContextConfig(optimizer="lbfgs")
    assert (cfg.steps, cfg.lr, cfg.warmup, cfg.batch) == (25, 1.0, 0, None)
    assert "L-BFGS" in cfg.describe_training()
    with pytest.raises(ConfigError, match="L-BFGS trains full batch: leave batch unset"):
        ContextConfig(optimizer="lbfgs", batch=64)


def _panel_cells(values, best, H=2, n=4, d=8):
    # one cell per value at T = best (memorized) and at 2 best + 1 (not memorized)
    cells = []
    for v, t in zip(values, best):
        for T, ok in ((t, True), (2 * t + 1, False)):
            cells.append({"H": H, "n": n, "d_h": v, "T": T, "memorized": [ok, ok],
                          "final_accuracy": [1.0, 1.0] if ok else [0.5, 0.7]})
    return cells


def test_flat_beyond_n_and_monotone_rows_by_hand():
    cfg = HeadSizeConfig(d=8, n=4, H=2, d_h_grid=(2, 4, 8, 16), flat_tol=0.5, T_factors=(1.0,), steps=20,
                         warmup=0)
    cells = _panel_cells([2, 4, 8, 16], [4, 10, 14, 16])
    p = panel(cfg, cells, "d_h", cfg.d_h_grid, cfg.H)
    assert p["bound"] == [3, 7, 7, 7]  # 2 (min(4, d_h) - 1) + 1
    assert p["largest_T_memorized"] == [4, 10, 14, 16]
    rows = flat_beyond_n(cfg, cells, p)
    # d_h = 8: (14 - 10) / 10 = +40% <= 50%; d_h = 16: +60% > 50%
    assert [r["status"] for r in rows] == ["pass", "FAIL"]
    assert rows[0]["measured"] == "14 vs 10 (+40%)"
    # accuracy at the T both trained on: none in common here
    assert "nan" in rows[0]["detail"]
    assert monotone_row(p)["status"] == "pass"
    assert monotone_row({**p, "largest_T_memorized": [4, 10, 9, 16]})["status"] == "FAIL"


@pytest.mark.slow
def test_tiny_context_run(tmp_path):
    cfg = ContextConfig(H=2, n_grid=(2, 4), T_factors=(1.0, 2.0), **TRAIN)
    res = run_context(cfg)
    p = res["data"]["panel"]
    assert p["values"] == [2, 4] and p["bound"] == [3, 7]  # 2 (n - 1) + 1
    cells = {(c["n"], c["T"]): c for c in res["data"]["cells"]}
    assert set(cells) == {(2, 3), (2, 6), (4, 7), (4, 14)}
    for key in [(2, 3), (4, 7)]:  # T at the bound: gradient descent fits every label
        assert cells[key]["memorized"] == [True, True] and cells[key]["final_accuracy"] == [1.0, 1.0]
    assert all(t >= b for t, b in zip(p["largest_T_memorized"], p["bound"]))
    statuses = {r["quantity"]: r["status"] for r in res["summary"]}
    assert statuses["largest T memorized, n=2 (d=8, H=2, d_h=8)"] == "pass"
    assert "largest T memorized is non-decreasing in n" in statuses
    assert [f["file"] for f in res["figures"]] == ["memorization-vs-T-per-context.png",
                                                  "memorization-capacity-vs-context.png"]
    assert res["figures"][0]["series"][1]["x"] == [7, 14]


@pytest.mark.slow
def test_tiny_regression_run_reuses_the_shared_cell():
    # T = half the bound: at the bound itself, fitting real labels needs saturated softmaxes and
    # takes gradient descent far longer than a test may (tests/training/test_models.py trains one)
    cfg = RegressionConfig(H_grid=(1, 2), H=2, n_grid=(2, 4), T_factors=(0.5,), mse_tol=1e-2, **TRAIN)
    res = run_regression(cfg)
    cells = res["data"]["cells"]
    # H panel (1, 4), (2, 4) and n panel (2, 2), (2, 4): the point (H=2, n=4) is trained once;
    # T = round(bound / 2) with bounds 4, 7, 3
    assert sorted((c["H"], c["n"], c["T"]) for c in cells) == [(1, 4, 2), (2, 2, 2), (2, 4, 4)]
    for c in cells:  # U(0, 1) labels (variance 1/12 = 0.083) fitted to MSE <= 1e-2
        assert c["memorized"] == [True, True] and max(c["final_mse"]) <= 1e-2
        assert all(1 <= s <= TRAIN["steps"] for s in c["steps_to_memorize"])
    pH, pn = res["data"]["panels"]
    assert pH["largest_T_memorized"] == [2, 4] and pn["largest_T_memorized"] == [2, 4]
    # the grid stops below the bound, so T* >= bound cannot be shown: those rows fail
    bound_rows = [r for r in res["summary"] if r["quantity"].startswith("largest T memorized, ")]
    assert len(bound_rows) == 4 and {r["status"] for r in bound_rows} == {"FAIL"}
    assert res["figures"][0]["yscale"] == "log" and len(res["figures"]) == 4


@pytest.mark.slow
def test_tiny_general_position_and_lbfgs_runs():
    cfg = GeneralPositionConfig(H_grid=(1, 2), H=1, n_grid=(), T_factors=(1.0,), **TRAIN)
    res = run_general_position(cfg)
    (p,) = res["data"]["panels"]  # empty n_grid: no n panel
    assert p["bound"] == [4, 7] and p["largest_T_memorized"] == [4, 7]
    ratio = next(r for r in res["summary"] if r["quantity"].startswith("T* / (H(d-1)+1)"))
    assert ratio["measured"] == f"{4 / 8:.2f}, {7 / 15:.2f}"  # H (d - 1) + 1 = 8, 15 at d = 8
    lb = ContextConfig(optimizer="lbfgs", H=1, n_grid=(4,), T_factors=(1.0,), d=8, steps=10, eval_every=1,
                       replicates=2)
    (cell,) = run_context(lb)["data"]["cells"]
    assert cell["T"] == 4 and cell["memorized"] == [True, True]
    assert all(1 <= s <= 10 for s in cell["steps_to_memorize"])


def test_threads_are_restored():
    from attnlab.papers.memorization.capacity_cells import train_cell

    before = torch.get_num_threads()
    cfg = ContextConfig(H=1, n_grid=(2,), T_factors=(1.0,), d=4, steps=2, warmup=0, replicates=1, eval_every=1)
    cell = train_cell(cfg, 1, 2, 2, 4)
    assert torch.get_num_threads() == before and cell["T"] == 2 and len(cell["memorized"]) == 1


@pytest.mark.parametrize("cls, bad, message", [
    (ContextConfig, dict(optimizer="sgd"), "optimizer must be one of adam, lbfgs, got 'sgd'"),
    (ContextConfig, dict(n_grid=(4, 128)), "every n in n_grid must be <= d=64"),
    (ContextConfig, dict(n_grid=(8, 8)), "n_grid must list distinct context sizes"),
    (ContextConfig, dict(H=0), "H must be an integer >= 1, got 0"),
    (HeadSizeConfig, dict(d_h_grid=(48, 64)), "d_h_grid needs a head size <= n=32"),
    (HeadSizeConfig, dict(d_h_grid=(0, 8)), "every d_h in d_h_grid must be an integer >= 1"),
    (HeadSizeConfig, dict(flat_tol=-0.1), "flat_tol must be a number >= 0"),
    (RegressionConfig, dict(mse_tol=0), "mse_tol must be a positive number"),
    (RegressionConfig, dict(H_grid=()), "H_grid must list distinct head counts"),
    (GeneralPositionConfig, dict(threads=0), "threads must be an integer >= 1"),
    (GeneralPositionConfig, dict(min_epochs=-1), "min_epochs must be an integer >= 0"),
    (GeneralPositionConfig, dict(T_factors=(0.0,)), "T_factors must be positive numbers"),
])
def test_bad_config(cls, bad, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cls(**bad)


@pytest.mark.parametrize("id, setting, message", [
    ("memorization.capacity-vs-context", "n_grid=4;128", "every n in n_grid must be <= d=64"),
    ("memorization.capacity-vs-head-size", "optimizer=sgd", "optimizer must be one of adam, lbfgs"),
    ("memorization.regression", "mse_tol=-1", "mse_tol must be a positive number"),
    ("memorization.general-position", "H=0", "H must be an integer >= 1, got 0"),
])
def test_bad_config_via_the_cli(capsys, tmp_path, id, setting, message):
    with pytest.raises(SystemExit) as e:
        main(["sweep", id, "--set", setting, "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1
    assert err[0].startswith("attnlab: error: ") and message in err[0]
