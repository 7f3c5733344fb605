"""Timed training of one cell (papers/memorization/timed_training.py): each replicate's data and
initialisation from its own seeds, the same models at once or one after another, and the accuracy
curve against wall time. Cell: d = 8, n = 4, d_h = 8, H = 2 (Theorem 1's bound 7), T = 10, 3 classes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from attnlab.papers.memorization.authors_model import authors_loss
from attnlab.papers.memorization.losses import classifier_loss
from attnlab.papers.memorization.timed_training import (
    TrainingCell,
    loss_and_metrics,
    replicate_data,
    stack_replicates,
    train_once,
    train_sequentially,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

CELL = TrainingCell(T=10, n=4, d=8, d_h=8, d_v=8, H=2, n_classes=3, keys="all", warmup_frac=0.05, eval_every=10,
                    seed=0)
ADAM = dict(optimizer="adam", lr=2e-2, batch=8, steps=300)


def test_replicate_data_from_its_own_seeds():
    E, x, y, s_init, s_batch = replicate_data(CELL, 1)
    assert E.shape == (4, 8) and x.shape == (10, 8) and y.shape == (10,)
    assert 0 <= E.min() and E.max() < 1 and 0 <= x.min() and x.max() < 1  # U(0, 1)
    assert set(y.tolist()) <= {0, 1, 2} and s_init != s_batch
    again = replicate_data(CELL, 1)
    assert np.array_equal(again[1], x) and np.array_equal(again[2], y) and again[3:] == (s_init, s_batch)
    assert not np.array_equal(replicate_data(CELL, 2)[1], x)


@pytest.mark.parametrize("model", ["authors", "plain"])
def test_a_replicate_is_the_same_model_alone_or_stacked(model):
    E, x, y, params, seeds = stack_replicates(CELL, [0, 1, 2], model)
    assert E.shape == (3, 4, 8) and x.shape == (3, 10, 8) and y.shape == (3, 10) and len(seeds) == 3
    assert E.dtype == x.dtype == torch.float32
    E1, x1, y1, p1, s1 = stack_replicates(CELL, [1], model)
    assert torch.equal(E1[0], E[1]) and torch.equal(x1[0], x[1]) and torch.equal(y1[0], y[1]) and s1 == seeds[1:2]
    assert all(torch.equal(p1[k][0], params[k][1]) for k in params)
    assert all(params[k].shape[0] == 3 for k in params)


def test_loss_and_metrics_by_model():
    loss, _ = loss_and_metrics(CELL, "authors")
    assert loss.func is authors_loss and loss.keywords == {"keys": "all"}
    assert loss_and_metrics(CELL, "plain")[0] is classifier_loss


def test_train_once_memorizes_the_cell_and_times_every_check():
    # T = 10 > bound 7: memorized by the authors' protocol well inside 300 updates (with seed 0: 40-50)
    run = train_once(CELL, [0, 1], model="authors", **ADAM)
    assert run.final_accuracy == [1.0, 1.0] and len(run.initial_accuracy) == 2
    assert all(1 <= s <= 300 and s % CELL.eval_every == 0 for s in run.steps_to_100)
    assert run.curve_t[0] == 0.0 and all(b >= a for a, b in itertools.pairwise(run.curve_t))
    assert len(run.curve_t) == len(run.curve_acc) and run.curve_acc[-1] == 1.0
    assert run.curve_acc[0] == pytest.approx(np.mean(run.initial_accuracy), abs=1e-6)
    assert run.wall_s >= run.curve_t[-1] > 0.0


def test_train_sequentially_trains_the_same_models_one_after_another():
    at_once = train_once(CELL, [0, 1], model="plain", **ADAM)
    one_by_one = train_sequentially(CELL, [0, 1], model="plain", **ADAM)
    alone = train_once(CELL, [1], model="plain", **ADAM)
    assert one_by_one.steps_to_100[1] == alone.steps_to_100[0] and one_by_one.final_accuracy == [1.0, 1.0]
    # the same models up to float32 reduction order: steps to 100% within one check of each other
    assert all(abs(a - b) <= CELL.eval_every for a, b in zip(at_once.steps_to_100, one_by_one.steps_to_100))
    # the curve: the mean over both replicates, the second at its initial accuracy while the first trains
    assert one_by_one.curve_acc[0] == pytest.approx(np.mean(one_by_one.initial_accuracy), abs=1e-12)
    assert one_by_one.curve_acc[-1] == 1.0 and all(b >= a for a, b in itertools.pairwise(one_by_one.curve_t))
    assert one_by_one.wall_s >= one_by_one.curve_t[-1] > 0.0  # the summed wall seconds


def test_lbfgs_is_checked_after_every_step():
    run = train_once(CELL, [0], model="authors", optimizer="lbfgs", lr=1.0, batch=None, steps=15)
    assert run.final_accuracy == [1.0] and 1 <= run.steps_to_100[0] <= 15
    assert len(run.curve_t) == run.steps_to_100[0] + 1  # the initial point, then one check per step
