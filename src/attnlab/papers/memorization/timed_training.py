"""Training one cell of Fig. 2(a) to 100% train accuracy, timed: M replicates at once or one after another.

memorization-capacity-of-mha §5.2 and App. A. A cell (:class:`TrainingCell`: d, n, d_h, d_v, H, classes,
T examples sharing one context, tokens and queries iid U(0, 1)^d, labels uniform) is trained by
:func:`attnlab.training.train_batched` with Adam under linear warmup + cosine decay (the authors'
schedule, :class:`attnlab.training.WarmupCosine`) or with L-BFGS, on the authors' model
(:mod:`attnlab.papers.memorization.authors_model`: embedding + sinusoidal positions + attention) or the
plain eqs. (1)-(6) model (:mod:`attnlab.papers.memorization.model`), until every model reaches 100%
train accuracy or the budget. Replicate r draws its data, labels, initialisation and minibatch order
from its own seeds (``SeedSequence([seed, T, r])``), so the M models trained at once
(:func:`train_once`, one vmapped step for all M) are the models trained one after another
(:func:`train_sequentially`): only the wall time may differ. A run records the train accuracy against
wall seconds at every check (:class:`TrainingRun`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from attnlab.papers.memorization.authors_model import authors_loss, authors_metrics, init_authors_model
from attnlab.papers.memorization.data import draw_dataset
from attnlab.papers.memorization.losses import classifier_loss, classifier_metrics
from attnlab.papers.memorization.model import init_attention_classifier
from attnlab.training import WarmupCosine, train_batched


@dataclass(frozen=True)
class TrainingCell:
    """One cell of Fig. 2(a) (paper notation) and how its training is checked.

    T examples sharing one context of n tokens in R^d; H heads of size d_h with d_v values each;
    n_classes labels; keys: the authors' model's keys ("all" or "context"); warmup_frac: linear
    warmup as a fraction of an Adam budget; eval_every: Adam updates between train-accuracy checks;
    seed: every replicate's seeds derive from it; device: where the models train."""

    T: int
    n: int
    d: int
    d_h: int
    d_v: int
    H: int
    n_classes: int
    keys: str
    warmup_frac: float
    eval_every: int
    seed: int
    device: str = "cpu"


@dataclass(frozen=True)
class TrainingRun:
    """M models trained to 100% train accuracy or to their budget (at once, or one after another)."""

    steps_to_100: list[int]  # (M,): updates to 100% train accuracy per model (-1: not within the budget)
    wall_s: float  # wall seconds of the training (summed where the models train one after another)
    final_accuracy: list[float]  # (M,): train accuracy at the end
    initial_accuracy: list[float]  # (M,): train accuracy at initialisation
    curve_t: list[float]  # (evaluations + 1,): wall seconds at each accuracy check, 0.0 (init) first
    curve_acc: list[float]  # (evaluations + 1,): train accuracy at curve_t, mean over the M models


def replicate_data(cell: TrainingCell, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Replicate r: E (n, d), x (T, d) ~ U(0, 1), y (T,) ~ U([n_classes]), init seed, batch seed."""
    s_data, s_label, s_init, s_batch = (int(s.generate_state(1)[0])
                                        for s in np.random.SeedSequence([cell.seed, cell.T, r]).spawn(4))
    E, x, _ = draw_dataset(cell.T, cell.n, cell.d, 1, shared=True, seed=s_data)
    y = np.random.default_rng(s_label).integers(0, cell.n_classes, cell.T)
    return E, x, y, s_init, s_batch


def stack_replicates(cell: TrainingCell, reps: list[int], model: str
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor], list[int]]:
    """-> E (M, n, d), x (M, T, d) float32, y (M, T), the parameters stacked on a leading M axis, and the
    minibatch seeds of replicates ``reps`` (M = len(reps)); ``model``: "authors" or "plain"."""
    E, x, y, inits, seeds = zip(*(replicate_data(cell, r) for r in reps))
    f32 = dict(dtype=torch.float32)
    params = []
    for s in inits:  # each replicate's init from its own generator: the same for any M
        g = torch.Generator().manual_seed(s)
        if model == "authors":
            params.append(init_authors_model(1, cell.d, cell.d, cell.n, cell.H, cell.d_h, cell.n_classes, g,
                                             d_v=cell.d_v))
        else:
            params.append(init_attention_classifier(1, cell.d, cell.n, cell.H, cell.d_h, cell.n_classes, g,
                                                    d_v=cell.d_v))
    stacked = {k: torch.cat([p[k] for p in params]) for k in params[0]}
    return (torch.tensor(np.stack(E), **f32), torch.tensor(np.stack(x), **f32), torch.tensor(np.stack(y)),
            stacked, list(seeds))


def loss_and_metrics(cell: TrainingCell, model: str) -> tuple[Callable, Callable]:
    """The loss and the metrics (train accuracy) of ``model``: the authors' with the cell's keys, or the
    plain classifier's."""
    if model == "authors":
        return partial(authors_loss, keys=cell.keys), partial(authors_metrics, keys=cell.keys)
    return classifier_loss, classifier_metrics


def train_once(cell: TrainingCell, reps: list[int], *, model: str, optimizer: str, lr: float,
               batch: int | None, steps: int) -> TrainingRun:
    """Train replicates ``reps`` at once; -> steps to 100%, wall seconds, final accuracies,
    and the accuracy curve (mean over the replicates) against wall time.

    optimizer "adam": peak lr with warmup_frac of ``steps`` warmup then cosine decay, accuracy checked
    every eval_every updates; "lbfgs": lr fixed, one step being up to 20 iterations, checked after each.
    batch: minibatch size, None for the full batch."""
    E, x, y, params, seeds = stack_replicates(cell, reps, model)
    loss_fn, metrics_fn = loss_and_metrics(cell, model)
    with torch.no_grad():
        acc0 = torch.stack([metrics_fn({k: p[m] for k, p in params.items()}, E[m], x[m], y[m])["accuracy"]
                            for m in range(len(reps))])
    times: list[float] = []

    def stop_when(metrics: dict) -> torch.Tensor:  # called once per evaluation: time-stamps it
        times.append(time.perf_counter() - start)
        return metrics["accuracy"] >= 1.0

    lbfgs = optimizer == "lbfgs"  # one L-BFGS step is up to 20 iterations: check after each
    schedule = lr if lbfgs else WarmupCosine(lr, int(cell.warmup_frac * steps), steps)
    start = time.perf_counter()
    result = train_batched(loss_fn, params, (x, y), seeds=seeds, model_data=(E,), steps=steps,
                           batch_size=batch, optimizer=optimizer, lr=schedule,
                           eval_every=1 if lbfgs else cell.eval_every, device=cell.device,
                           metrics_fn=metrics_fn, stop_when=stop_when)
    wall = time.perf_counter() - start
    acc = result.history["accuracy"]  # (n_evals, M); a stopped model keeps its parameters
    return TrainingRun(steps_to_100=result.steps_to_stop.tolist(), wall_s=wall,
                       final_accuracy=acc[-1].tolist(), initial_accuracy=acc0.tolist(),
                       curve_t=[0.0, *times], curve_acc=[acc0.mean().item(), *acc.mean(1).tolist()])


def train_sequentially(cell: TrainingCell, reps: list[int], *, model: str, optimizer: str, lr: float,
                       batch: int | None, steps: int) -> TrainingRun:
    """One :func:`train_once` per replicate; the curve is the mean accuracy over all replicates
    (those not started yet at their initial accuracy) against the summed wall time."""
    runs = [train_once(cell, [r], model=model, optimizer=optimizer, lr=lr, batch=batch, steps=steps)
            for r in reps]
    accs = [run.initial_accuracy[0] for run in runs]
    t0, curve_t, curve_acc = 0.0, [0.0], [float(np.mean(accs))]
    for m, run in enumerate(runs):
        for t, a in zip(run.curve_t[1:], run.curve_acc[1:]):
            accs[m] = a
            curve_t.append(t0 + t)
            curve_acc.append(float(np.mean(accs)))
        t0 += run.wall_s
    return TrainingRun(steps_to_100=[run.steps_to_100[0] for run in runs], wall_s=t0,
                       final_accuracy=[run.final_accuracy[0] for run in runs],
                       initial_accuracy=[run.initial_accuracy[0] for run in runs],
                       curve_t=curve_t, curve_acc=curve_acc)
