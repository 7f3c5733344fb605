"""Shared core of the memorization-capacity experiments (Fig. 2, 4, 5): settings, cells, T*.

memorization-capacity-of-mha §5.2, Appendix A, Appendix H, Appendix I.1. A *cell*
is one model size (H heads, context size n, head size d_h; d fixed) and one data-set
size T: ``replicates`` models, each with its own data set and init, trained at once
by :func:`attnlab.training.train_batched` (vmap over models). Data (§5.2, App. I.1):
queries e^(t) iid U(0, 1)^d and context tokens iid U(0, 1)^d, either one context E
shared by all T examples (``CONTEXT = "shared"``, Proposition 2, Fig. 2 and 5) or
one per example (``"per-example"``, App. I.1, Fig. 4); labels (App. A) uniform over
``n_classes`` classes, or real y^(t) ~ U(0, 1) with d_out = 1 for regression.

A replicate *memorizes* its T examples when its train accuracy is 100%
(classification) or its train MSE is at most ``mse_tol`` (regression); T* of a model
size is the largest T of its grid that every replicate memorized (0 if none), set
beside Theorem 1's T = H (min(n, d_h) - 1) + 1.

Training (``optimizer``): "adam", full batch or minibatch ``batch``, peak ``lr``
with linear warmup and cosine decay (training.schedules), a model stopping once it
has memorized; or "lbfgs", full batch, constant ``lr``, ``steps`` L-BFGS steps of
up to 20 iterations each. The authors' protocol (App. A: Adam, lr 1e-3, batch 256,
warmup + cosine, at least 50k steps and at least 500 epochs, 300k steps for Fig.
2(c)) is :data:`AUTHORS_PROTOCOL`, the ``--scale paper`` preset of every experiment.
"""

from __future__ import annotations

from torch import Tensor

import math
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, ClassVar, Mapping

import numpy as np
import torch

from attnlab.analysis.regression import linear_fit as _line
from attnlab.config import RunConfig, check_choice, check_int, check_ints, check_number, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, total
from attnlab.papers.memorization.authors_model import (
    AUTHORS_RELEASED,
    authors_loss,
    authors_metrics,
    authors_regression_loss,
    authors_regression_metrics,
    init_authors_model,
)
from attnlab.papers.memorization.data import draw_dataset
from attnlab.papers.memorization.losses import (
    classifier_loss,
    classifier_metrics,
    regression_loss,
    regression_metrics,
)
from attnlab.papers.memorization.model import init_attention_classifier, theorem1_bound, training_bytes
from attnlab.runs.rundir import log_metric
from attnlab.runs.threads import num_threads
from attnlab.training import WarmupCosine, train_batched

OPTIMIZERS = ("adam", "lbfgs")
# eqs. (1)-(6) on the raw tokens | §5.2's embedding + PE + attention with d_v = d_h and the query attending to
# itself | the same as the authors released it (AUTHORS_RELEASED: d_v = 1, the query's own key masked)
MODELS = ("plain", "authors", "released")
EMBEDDED = ("authors", "released")  # the models with the embedding layer and positional encoding
# App. A: Adam lr 1e-3, batch 256, linear warmup + cosine decay, >= 50k steps and >= 500 epochs.
# The warmup length is not stated; 5% of the steps is our choice.
AUTHORS_PROTOCOL = {"optimizer": "adam", "lr": 1e-3, "batch": 256, "steps": 50_000, "warmup": 2_500,
                    "min_epochs": 500, "eval_every": 500}
# L-BFGS: full batch, constant lr; a step is one torch.optim.LBFGS.step (<= 20 iterations)
STEP_BUDGET = "the step budget: training stops once the examples are memorised"  # a time that is a bound
LBFGS_PRESETS = {"quick": {"steps": 25, "lr": 1.0, "warmup": 0, "batch": None, "min_epochs": 0, "eval_every": 5},
                 "paper": {"steps": 2_500, "lr": 1.0, "warmup": 0, "batch": None, "min_epochs": 0,
                           "eval_every": 50}}


def n_grid_within_d(n_grid: Any, d: Any, what: str) -> tuple[int, ...]:
    """n_grid as :func:`check_grid` makes it (context sizes >= 2), each n <= d (d checked first)."""
    grid = check_grid("n_grid", n_grid, what, minimum=2)
    if max(grid) > check_int("d", d, 1):
        raise ConfigError(f"every n in n_grid must be <= d={d} (Assumption 2: n linearly independent "
                          f"tokens in R^d), got {n_grid!r}")
    return grid


def check_grid(name: str, values, what: str, minimum: int = 1) -> tuple[int, ...]:
    """A swept grid (H_grid, n_grid, d_h_grid): distinct integers >= minimum, sorted."""
    values = check_ints(name, values, minimum)
    if len(set(values)) != len(values):
        raise ConfigError(f"{name} must list distinct {what}, got {values!r}")
    return tuple(sorted(values))


@dataclass(frozen=True)
class CapacitySettings(RunConfig):
    """Settings every capacity experiment shares (paper notation).

    Fields left None come from the scale preset (the subclass's ``PRESETS``; with
    ``optimizer="lbfgs"``, :data:`LBFGS_PRESETS` first). Subclasses add the swept grid(s)
    and set ``TASK`` ("classification" | "regression") and ``CONTEXT`` ("shared" |
    "per-example").
    """

    TASK: ClassVar[str] = "classification"
    CONTEXT: ClassVar[str] = "shared"

    d: int = param(64, "token dimension d")
    n: int = param(32, "context size n at the fixed point of a sweep")
    d_h: int | None = param(None, "head size d_h at the fixed point (None: d)")
    n_classes: int = param(100, "label classes")
    T_factors: tuple[float, ...] | None = param(
        None, "data-set sizes as multiples of the bound H (min(n, d_h) - 1) + 1 of each model size")
    optimizer: str = param("adam", "adam or lbfgs")
    model: str = param("plain", "plain (eqs. (1)-(6) on the raw tokens), authors (§5.2: linear embedding + "
                                "sinusoidal PE + attention, read out at the query token, d_v = d_h) or released "
                                "(the same as the authors released it: d_v = 1, the query's own key masked)")
    steps: int | None = param(None, "training steps (L-BFGS: steps of up to 20 iterations)")
    lr: float | None = param(None, "peak learning rate (L-BFGS: the constant rate)")
    warmup: int | None = param(None, "linear warmup steps before the cosine decay")
    batch: int | None = param(None, "minibatch size (None: full batch)")
    min_epochs: int | None = param(None, "at least min_epochs T / batch steps (App. A)")
    replicates: int | None = param(None, "models (data set + init) per cell")
    eval_every: int | None = param(None, "updates between memorization checks (early stop)")
    # 1 by default: the matrices are tiny, and on a busy 2-core machine 2 threads made a
    # cell ~30x slower (57 s instead of 1.7 s)
    threads: int = param(1, "torch intra-op threads while a cell trains (restored afterwards)")

    @classmethod
    def preset(cls, values: Mapping[str, Any]) -> Mapping[str, Any]:
        """PRESETS[scale]; with L-BFGS, which trains full batch with its own budget and rate,
        LBFGS_PRESETS[scale] over it (batch None whatever the Adam preset's batch)."""
        preset = super().preset(values)
        if values["optimizer"] == "lbfgs":
            return {**preset, **LBFGS_PRESETS.get(values["scale"], {})}
        return preset

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """d_h left None takes d; T_factors sorted floats (checked here)."""
        v = super().normal_form(values)
        if v["optimizer"] == "lbfgs" and v["batch"] is not None:  # the L-BFGS preset leaves batch None
            raise ConfigError(f"L-BFGS trains full batch: leave batch unset, got batch={v['batch']!r}")
        if v["d_h"] is None:
            v["d_h"] = v["d"]
        if not isinstance(v["T_factors"], (list, tuple)) or not v["T_factors"]:
            raise ConfigError(f"T_factors must list positive numbers (multiples of the bound), got {v['T_factors']!r}")
        for f in v["T_factors"]:
            check_number("every factor in T_factors", f, 0, open_min=True)
        v["T_factors"] = tuple(sorted(float(f) for f in v["T_factors"]))
        return v

    def validate(self) -> None:
        check_choice("model", self.model, MODELS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        if self.model in EMBEDDED and self.d % 2:
            raise ConfigError(f"model={self.model} adds sinusoidal positions, which need an even d, got d={self.d}")
        for name, minimum in (("d", 1), ("n", 2), ("d_h", 1), ("n_classes", 2), ("steps", 1), ("warmup", 0),
                              ("min_epochs", 0), ("replicates", 1), ("eval_every", 1), ("threads", 1)):
            check_int(name, getattr(self, name), minimum)
        if self.batch is not None:
            check_int("batch", self.batch, 1)
        if self.warmup >= self.steps:
            raise ConfigError(f"warmup ({self.warmup}) must be smaller than steps ({self.steps})")
        check_number("lr", self.lr, 0, open_min=True)

    def points(self) -> list[tuple[int, int, int]]:
        """(H, n, d_h) of every model size the experiment trains (its subclass says; none here)."""
        return []

    def estimate(self) -> Estimate | None:
        """Memory: the largest cell of :meth:`points` at the top of its T grid; work: the sum over
        every cell (H, n, d_h, T) the run trains, each at its step budget (:func:`cell_estimate`;
        an upper bound, since a cell stops once its models have memorized)."""
        points = self.points()
        if not points:
            return None
        cells = [cell_estimate(self, H, n, d_h, T) for H, n, d_h in dict.fromkeys(points)
                 for T in self.T_grid(H, n, d_h)]
        top = max(cells, key=lambda e: e.peak_bytes)
        return total(cells, top.what)

    def T_grid(self, H: int, n: int | None = None, d_h: int | None = None) -> list[int]:
        """Data-set sizes tried at (H, n, d_h): round(f * (H (min(n, d_h) - 1) + 1)), distinct, ascending."""
        bound = theorem1_bound(H, self.n if n is None else n, self.d_h if d_h is None else d_h)
        return sorted({max(1, round(f * bound)) for f in self.T_factors})

    def steps_for(self, T: int) -> int:
        """Updates for a data set of T examples: max(steps, ceil(min_epochs T / batch)) (App. A)."""
        if self.batch is None or self.batch >= T:
            return self.steps
        return max(self.steps, math.ceil(self.min_epochs * T / self.batch))

    def memorized(self, metrics: dict[str, torch.Tensor]) -> torch.Tensor:
        """(M,) bool: 100% train accuracy, or train MSE <= mse_tol (regression)."""
        if self.TASK == "regression":
            return metrics["mse"] <= self.mse_tol
        return metrics["accuracy"] >= 1.0

    @property
    def d_v(self) -> int:
        """Values per head: 1 for the released model (AUTHORS_RELEASED), d_h otherwise (per point: None)."""
        return AUTHORS_RELEASED["d_v"] if self.model == "released" else None

    def describe_model(self) -> str:
        if self.model == "released":
            return ("The model is the authors' as released (§5.2, model=released; github.com/smahdavi4/"
                    "attention-memorization, src/attn_models.py, BaselineAttention): a linear embedding of the raw "
                    "tokens, sinusoidal positional encoding, one attention layer with d_v = 1 per head and the "
                    "query's own key masked, logits / sqrt(d), read out at the query token "
                    "(attnlab.papers.memorization.authors_model).")
        if self.model == "authors":
            return ("The model is the authors' architecture (§5.2, model=authors): a linear embedding of the raw "
                    "tokens, sinusoidal positional encoding, one attention layer read out at the query token "
                    "(attnlab.papers.memorization.authors_model), with d_v = d_h and the query attending to "
                    "itself too; the released model has d_v = 1 and masks the query's own key "
                    "(memorization.authors-capacity searches that one).")
        return ("The model is eqs. (1)-(6) on the raw U(0,1) inputs (model=plain); the paper's embedding layer "
                "and positional encoding are left out (model=authors puts them back).")

    def describe_training(self) -> str:
        if self.optimizer == "lbfgs":
            return (f"full-batch L-BFGS (strong Wolfe), lr {self.lr:g}, up to {self.steps} steps of <= 20 "
                    f"iterations")
        batch = "full batch" if self.batch is None else f"batch {self.batch}, >= {self.min_epochs} epochs"
        return (f"Adam, peak lr {self.lr:g}, {self.warmup} warmup steps then cosine decay over {self.steps} "
                f"steps, {batch}")


@dataclass(frozen=True)
class TwoPanelSettings(CapacitySettings):
    """Fig. 4 and 5's layout: an H panel (H_grid at n = ``n``) and an n panel (n_grid at H = ``H``)."""

    H_grid: tuple[int, ...] | None = param(None, "numbers of heads H of the H panel (at n = n)")
    H: int | None = param(None, "number of heads of the n panel")
    n_grid: tuple[int, ...] | None = param(None, "context sizes n of the n panel (empty: no n panel)")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """H_grid and n_grid sorted distinct (checked here; n_grid () or [] is no n panel)."""
        v = super().normal_form(values)
        v["H_grid"] = check_grid("H_grid", v["H_grid"], "head counts")
        v["n_grid"] = () if v["n_grid"] in ((), []) else n_grid_within_d(
            v["n_grid"], v["d"], "context sizes (or be empty: no n panel)")
        return v

    def validate(self) -> None:
        super().validate()
        check_int("H", self.H, 1)

    def points(self) -> list[tuple[int, int, int]]:
        """The H panel (H_grid at n) and the n panel (n_grid at H)."""
        return [(H, self.n, self.d_h) for H in self.H_grid] + [(self.H, n, self.d_h) for n in self.n_grid]


# --------------------------------------------------------------------------------------
# the work of training (time estimates)
# --------------------------------------------------------------------------------------
TORCH_OP = 0.1  # one torch op on small tensors, in small calls (~20 us against the 32 x 64 SVD's ~0.2 ms)
STEP_OPS = 60  # torch ops of one vmapped forward + backward of eqs. (1)-(6) (fitted: module section below)
ADAM_OPS = 12  # torch ops per parameter tensor of one Adam update (moments, bias correction, step, mask)
LBFGS_PAIR_OPS = 8  # torch ops per stored (s, y) pair in one L-BFGS iteration (the two-loop recursion)


def forward_flops(H: int, n: int, d: int, d_h: int, d_v: int, d_out: int, *, shared_context: bool,
                  embedded: bool = False) -> tuple[float, float]:
    """(F_ex, F_model): the products of one forward pass of eqs. (1)-(6), per example and once per
    model and pass (keys and values of a shared context, the circuits W_QK, W_OV of
    per-example contexts), 2 m k n each (:func:`attnlab.estimates.matmul_flops`):

        shared context    F_ex = 2 H (d d_h + n d_h + n d_v + d_v d) + 2 d d_out
                          F_model = 2 H n d (d_h + d_v)
        per example       F_ex = 2 H (2 d^2 + 2 n d) + 2 d d_out,   F_model = 2 H d^2 (d_h + d_v)
        embedded (§5.2)   F_ex = 2 (n + 1) d^2 + 2 H (n + 1) d (d_h + d_v) + 2 H (d d_h
                                 + (n + 1)(d_h + d_v) + d_v d) + 2 d d_out,   F_model = 0
    """
    if embedded:
        m = n + 1
        return (2.0 * m * d * d + 2.0 * H * m * d * (d_h + d_v)
                + 2.0 * H * (d * d_h + m * (d_h + d_v) + d_v * d) + 2.0 * d * d_out), 0.0
    if shared_context:
        return 2.0 * H * (d * d_h + n * d_h + n * d_v + d_v * d) + 2.0 * d * d_out, 2.0 * H * n * d * (d_h + d_v)
    return 2.0 * H * (2 * d * d + 2 * n * d) + 2.0 * d * d_out, 2.0 * H * d * d * (d_h + d_v)


def training_work(M: int, T: int, H: int, n: int, d: int, d_h: int, d_out: int, *, steps: int,
                  batch: int | None = None, evals: int = 0, shared_context: bool = True, embedded: bool = False,
                  d_v: int | None = None, optimizer: str = "adam", itemsize: int = 4,
                  step_ops: float = STEP_OPS, lbfgs_iterations: int = 20, lbfgs_history: int = 100
                  ) -> dict[str, float]:
    """The work of training M models at once for ``steps`` updates on B = ``batch`` (None: T)
    of their T examples, with ``evals`` full-data evaluations, as Estimate keywords
    (:mod:`attnlab.estimates`; F_ex, F_model of :func:`forward_flops`, P = 3 H d d_h + d d_out
    parameters per model):

        gemm     M (3 S (B F_ex + F_model) + E (T F_ex + F_model))   forward + backward = 3 forwards
        traffic  itemsize M (S (30 B H n + 10 P) + 10 E T H n)       the softmax and the loss over
                                                                      the logits; Adam's 10 passes over P
        calls    TORCH_OP (S (step_ops + ADAM_OPS 5) + E step_ops / 2)

    S = steps for Adam. L-BFGS trains the models one after another, full batch (B = T): S = M
    steps lbfgs_iterations iterations, each a forward + backward with LBFGS_PAIR_OPS
    min(lbfgs_history, steps lbfgs_iterations) ops more than step_ops (the two-loop recursion
    over the stored pairs), and no Adam. The step budget is what is counted: a run that stops
    once it has memorized, or L-BFGS once it has converged, takes at most this."""
    d_v = d_h if d_v is None else d_v
    B = T if batch is None or batch >= T else batch
    f_ex, f_model = forward_flops(H, n, d, d_h, d_v, d_out, shared_context=shared_context, embedded=embedded)
    P = H * d * (2 * d_h + d_v) + d * d_out + (d * d if embedded else 0)
    if optimizer == "lbfgs":  # one model after another, full batch
        S, B = M * steps * lbfgs_iterations, T
        ops = step_ops + LBFGS_PAIR_OPS * min(lbfgs_history, steps * lbfgs_iterations)
        gemm = 3 * S * (B * f_ex + f_model) + M * evals * (T * f_ex + f_model)
        traffic = itemsize * (S * (30 * B * H * n + 10 * P) + 10 * M * evals * T * H * n)
        return {"gemm": gemm, "traffic": traffic, "calls": TORCH_OP * (S * ops + evals * step_ops / 2)}
    S = steps
    gemm = M * (3 * S * (B * f_ex + f_model) + evals * (T * f_ex + f_model))
    traffic = itemsize * M * (S * (30 * B * H * n + 10 * P) + 10 * evals * T * H * n)
    return {"gemm": gemm, "traffic": traffic, "calls": TORCH_OP * (S * (step_ops + 5 * ADAM_OPS)
                                                                   + evals * step_ops / 2)}


# --------------------------------------------------------------------------------------
# one cell: `replicates` models at once
# --------------------------------------------------------------------------------------
def cell_estimate(cfg: CapacitySettings, H: int, n: int, d_h: int, T: int) -> Estimate:
    """One cell (:func:`train_cell`): ``replicates`` models trained at once on T examples each.
    Memory: :func:`attnlab.papers.memorization.model.training_bytes` (d_out = n_classes, 1 for
    regression). Work: :func:`training_work` over the cell's step budget S = steps_for(T), with
    S / eval_every evaluations. A model leaves once it memorizes and the cell once all have, so
    the time is an upper bound (a cell that memorizes early takes less)."""
    R, shared = cfg.replicates, cfg.CONTEXT == "shared"
    d_out = 1 if cfg.TASK == "regression" else cfg.n_classes
    embedded = cfg.model in EMBEDDED
    need = training_bytes(R, T, H, n, cfg.d, d_h, d_out, shared_context=shared, embedded=embedded,
                          lbfgs=cfg.optimizer == "lbfgs")
    steps = cfg.steps_for(T)
    work = training_work(R, T, H, n, cfg.d, d_h, d_out, steps=steps, batch=cfg.batch,
                         evals=max(1, steps // cfg.eval_every), shared_context=shared, embedded=embedded,
                         d_v=cfg.d_v, optimizer=cfg.optimizer)
    what = (f"a cell of {R} models at H = {H}, n = {n}, d_h = {d_h}, T = {T}, "
            f"{'one context' if shared else 'a context per example'}, float32")
    return Estimate(need, what, **work, lower=("T_factors", "replicates"), time_bound=STEP_BUDGET)


def _cell_key(cfg: CapacitySettings, H: int, n: int, d_h: int, T: int) -> list[int]:
    # the fixed point keeps the key of Fig. 2(a)'s original runs, so its data are unchanged
    return [cfg.seed, H, T] if (n, d_h) == (cfg.n, cfg.d_h) else [cfg.seed, H, T, n, d_h]


def cell_data(cfg: CapacitySettings, H: int, n: int, d_h: int, T: int) -> tuple:
    """Per replicate: context E ((n, d) shared or (T, n, d)), queries e (T, d) ~ U(0, 1), labels y
    (T,) int64 in [n_classes] or float ~ U(0, 1). -> E (R, ...), e (R, T, d), y (R, T), seeds (R,)."""
    Es, es, ys, seeds = [], [], [], []
    for rep in range(cfg.replicates):
        ss = np.random.SeedSequence(_cell_key(cfg, H, n, d_h, T) + [rep])
        s_data, s_label, s_batch = (int(x.generate_state(1)[0]) for x in ss.spawn(3))
        E, e, _ = draw_dataset(T, n, cfg.d, 1, shared=cfg.CONTEXT == "shared", seed=s_data)
        rng = np.random.default_rng(s_label)
        Es.append(E)
        es.append(e)
        ys.append(rng.uniform(size=T) if cfg.TASK == "regression" else rng.integers(0, cfg.n_classes, T))
        seeds.append(s_batch)
    f32 = dict(dtype=torch.float32)
    y = torch.tensor(np.stack(ys), **f32) if cfg.TASK == "regression" else torch.tensor(np.stack(ys))
    return torch.tensor(np.stack(Es), **f32), torch.tensor(np.stack(es), **f32), y, seeds


@dataclass(frozen=True)
class Cell:
    """The replicates trained at one (H, n, d_h, T): whether each memorized, and its final score."""

    H: int  # heads
    n: int  # context size
    d_h: int  # head size
    T: int  # examples
    memorized: list[bool]  # (replicates,): 100% train accuracy, or train MSE <= mse_tol (regression)
    steps_to_memorize: list[int]  # (replicates,): updates until memorized (-1: not within the budget)
    seconds: float  # wall seconds of the cell, rounded to 1 ms
    final_accuracy: list[float] | None = None  # (replicates,): final train accuracy (classification)
    final_mse: list[float] | None = None  # (replicates,): final train MSE (regression)
    final_max_abs_error: list[float] | None = None  # (replicates,): final max_t |y_hat - y| (regression)

    @property
    def score(self) -> float:
        """Mean final train MSE over the replicates (regression), else mean final train accuracy."""
        return float(np.mean(self.final_mse if self.final_mse is not None else self.final_accuracy))

    def to_dict(self) -> dict:
        """The stored cell: (H, n, d_h, T), memorized, the final scores of its task, steps, seconds."""
        out = {"H": self.H, "n": self.n, "d_h": self.d_h, "T": self.T, "memorized": self.memorized}
        if self.final_mse is not None:
            out["final_mse"] = self.final_mse
            out["final_max_abs_error"] = self.final_max_abs_error
        else:
            out["final_accuracy"] = self.final_accuracy
        out["steps_to_memorize"] = self.steps_to_memorize
        out["seconds"] = self.seconds
        return out


def train_cell(cfg: CapacitySettings, H: int, T: int, n: int | None = None, d_h: int | None = None) -> Cell:
    """Train the replicates of (H, n, d_h, T); -> memorized flags, final accuracy or MSE, steps to memorize."""
    n = cfg.n if n is None else n
    d_h = cfg.d_h if d_h is None else d_h
    with num_threads(cfg.threads):
        return _train_cell(cfg, H, n, d_h, T)


def _train_cell(cfg: CapacitySettings, H: int, n: int, d_h: int, T: int) -> Cell:
    start = time.perf_counter()
    E, e, y, seeds = cell_data(cfg, H, n, d_h, T)
    gen = torch.Generator().manual_seed(int(np.random.SeedSequence(_cell_key(cfg, H, n, d_h, T))
                                            .generate_state(1)[0]))
    regression = cfg.TASK == "regression"
    d_out = 1 if regression else cfg.n_classes
    if cfg.model in EMBEDDED:
        params = init_authors_model(cfg.replicates, cfg.d, cfg.d, n, H, d_h, d_out, gen, d_v=cfg.d_v)
        keys = {"keys": AUTHORS_RELEASED["keys"]} if cfg.model == "released" else {}  # "all" otherwise
        loss_fn = partial(authors_regression_loss if regression else authors_loss, **keys)
        metrics_fn = partial(authors_regression_metrics if regression else authors_metrics, **keys)
        metrics_fn = _with_mse(metrics_fn) if regression else metrics_fn
    else:
        params = init_attention_classifier(cfg.replicates, cfg.d, n, H, d_h, d_out, gen)
        loss_fn = regression_loss if regression else classifier_loss
        metrics_fn = regression_metrics if regression else classifier_metrics
    steps = cfg.steps_for(T)
    batch = None if cfg.batch is None or cfg.batch >= T else cfg.batch
    shared = cfg.CONTEXT == "shared"
    result = train_batched(
        loss_fn, params, (e, y) if shared else (E, e, y),
        seeds=seeds, model_data=(E,) if shared else (), steps=steps, batch_size=batch,
        optimizer=cfg.optimizer, lr=cfg.lr if cfg.optimizer == "lbfgs" else WarmupCosine(cfg.lr, cfg.warmup, steps),
        eval_every=cfg.eval_every, device=cfg.device,
        metrics_fn=metrics_fn, stop_when=cfg.memorized,
    )
    # a stopped model keeps its parameters, so the last evaluation is every model's final state
    final = {k: v[-1] for k, v in result.history.items()}
    scores = ({"final_mse": final["mse"].tolist(), "final_max_abs_error": final["max_abs_error"].tolist()}
              if regression else {"final_accuracy": final["accuracy"].tolist()})
    return Cell(H=H, n=n, d_h=d_h, T=T, memorized=result.stopped.tolist(),
                steps_to_memorize=result.steps_to_stop.tolist(), seconds=round(time.perf_counter() - start, 3),
                **scores)


def _with_mse(metrics_fn: Callable[..., dict[str, Tensor]]) -> Callable[..., dict[str, Tensor]]:
    """metrics_fn plus "mse" (= its "loss", the full-data MSE), which ``memorized`` reads."""
    def metrics(*args):
        out = metrics_fn(*args)
        return {**out, "mse": out["loss"]}
    return metrics


def run_points(cfg: CapacitySettings, points: list[tuple[int, int, int]], run_dir, experiment_id: str,
               done: list[Cell] | None = None) -> list[Cell]:
    """Train every (H, n, d_h) of ``points`` at every T of its grid; cells already in ``done`` are reused."""
    cells = list(done or [])
    have = {(c.H, c.n, c.d_h, c.T) for c in cells}
    for H, n, d_h in points:
        for T in cfg.T_grid(H, n, d_h):
            if (H, n, d_h, T) in have:
                continue
            cell = train_cell(cfg, H, T, n, d_h)
            cells.append(cell)
            have.add((H, n, d_h, T))
            log_metric(run_dir, {"experiment": experiment_id, **cell.to_dict()})
    return cells


# --------------------------------------------------------------------------------------
# derived numbers
# --------------------------------------------------------------------------------------
def largest_memorized(cells: list[Cell], H: int, n: int | None = None, d_h: int | None = None) -> int:
    """T*: the largest T of the grid that every replicate memorized at (H, n, d_h) (0 if none);
    n, d_h None: any."""
    return max((c.T for c in cells if c.H == H and (n is None or c.n == n)
                and (d_h is None or c.d_h == d_h) and all(c.memorized)), default=0)


def linear_fit(x: list[float], y: list[float]) -> tuple[float, float, float]:
    """Least-squares y = a x + b -> (a, b, R^2), R^2 = 1 - SS_res / SS_tot (nan if y is constant)."""
    if len(x) < 2 or len(set(map(float, x))) < 2:
        return float("nan"), float("nan"), float("nan")
    return tuple(_line(x, y))
