"""The capacity experiments' shared core (papers/memorization/capacity_cells.py): presets, the
App. A step rule, T* and the fit, one cell's training, and the settings' checks."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.memorization.capacity_cells import (
    AUTHORS_PROTOCOL,
    Cell,
    largest_memorized,
    linear_fit,
    train_cell,
)
from attnlab.papers.memorization.experiments.capacity_vs_context import ContextConfig
from attnlab.papers.memorization.experiments.capacity_vs_head_size import HeadSizeConfig
from attnlab.papers.memorization.experiments.capacity_vs_heads import CapacityConfig
from attnlab.papers.memorization.experiments.general_position import GeneralPositionConfig
from attnlab.papers.memorization.experiments.regression import RegressionConfig
from attnlab.registry import get_experiment
from tolerances import FLOAT64

IDS = {"memorization.capacity-vs-context": ContextConfig, "memorization.capacity-vs-head-size": HeadSizeConfig,
       "memorization.regression": RegressionConfig, "memorization.general-position": GeneralPositionConfig}


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


def test_linear_fit_and_largest_memorized():
    a, b, r2 = linear_fit([1, 2, 4], [3, 5, 9])  # exactly 2 H + 1
    assert abs(a - 2) < FLOAT64 and abs(b - 1) < FLOAT64 and abs(r2 - 1) < FLOAT64
    a, b, r2 = linear_fit([1, 2, 3], [1, 3, 2])  # by hand: a = 1/2, b = 1, SS_res = 1.5, SS_tot = 2
    assert abs(a - 0.5) < FLOAT64 and abs(b - 1) < FLOAT64 and abs(r2 - 0.25) < FLOAT64
    def cell(H, T, memorized):
        return Cell(H=H, n=4, d_h=4, T=T, memorized=memorized, steps_to_memorize=[-1, -1], seconds=0.0)

    cells = [cell(1, 4, [True, True]), cell(1, 8, [True, False]), cell(2, 7, [False, False])]
    assert largest_memorized(cells, 1) == 4 and largest_memorized(cells, 2) == 0


def test_threads_are_restored():
    before = torch.get_num_threads()
    cfg = ContextConfig(H=1, n_grid=(2,), T_factors=(1.0,), d=4, steps=2, warmup=0, replicates=1, eval_every=1)
    cell = train_cell(cfg, 1, 2, 2, 4)
    assert torch.get_num_threads() == before and cell.T == 2 and len(cell.memorized) == 1


@pytest.mark.parametrize("cls, bad, message", [
    (ContextConfig, dict(optimizer="sgd"), "optimizer must be one of adam, lbfgs, got 'sgd'"),
    (GeneralPositionConfig, dict(threads=0), "threads must be an integer >= 1"),
    (GeneralPositionConfig, dict(min_epochs=-1), "min_epochs must be an integer >= 0"),
    (GeneralPositionConfig, dict(T_factors=(0.0,)), "every factor in T_factors must be a finite number in (0, inf)"),
    (RegressionConfig, dict(H_grid=()), "H_grid must be a non-empty list of integers >= 1"),
    (RegressionConfig, dict(H_grid=(1, 1)), "H_grid must list distinct head counts"),
    (RegressionConfig, dict(n_grid=(4, 128)), "every n in n_grid must be <= d=64"),
])
def test_bad_settings(cls, bad, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cls(**bad)
