"""memorization.training-options: how the memorization paper trains, and what else could.

memorization-capacity-of-mha §5.2 and Appendices A and H. One cell of Fig. 2(a)
(d = 64, n = 32, d_h = d, H = 4, one context shared by all T examples, 100
classes, raw tokens and queries iid U(0, 1)^d) is trained to 100% train accuracy
by several options, each with a step budget:

- ``authors``: the authors' protocol (App. A) on the authors' model
  (embedding + sinusoidal positional encoding + one attention layer,
  :mod:`attnlab.papers.memorization.authors_model`): Adam, lr 1e-3, batch 256, linear warmup
  (5% of the budget, as the authors' code) then cosine decay to 0 at the budget;
- ``authors-plain``: the same protocol on the plain eqs. (1)-(6) model on the raw
  inputs (:mod:`attnlab.papers.memorization.model`, no embedding, no positional encoding);
- ``full-batch-adam``: the authors' model, full-batch Adam with a larger peak lr;
- ``full-batch-lbfgs``: the authors' model, full-batch L-BFGS (strong Wolfe);
- ``replicates-batched`` / ``replicates-sequential``: M replicates (own data set
  and init each) of the authors' protocol, trained at once with
  :func:`attnlab.training.train_batched` (one vmapped step for all M) or one
  after the other; the same models, so only the wall time may differ.

Measured per option: updates to 100% train accuracy (checked every
``eval_every`` updates), wall seconds, final train accuracy, and train accuracy
against wall time (figure). The paper trains >= 500 epochs and >= 50k steps (App.
A) and 300k steps (App. H, where it memorizes about 550 examples at H = 4); the
quick scale stops at 100% accuracy or after ``steps`` updates.

With T < 256 a batch of 256 is the whole data set: the authors' DataLoader then
yields full batches, and so does this experiment (noted in the report).

The like-for-like run of App. H. On the released model (``--set d_v=1 --set keys=context``) at
App. H's size (d = 64, n = 32, d_h = 64, 100 classes) and at its T (550 at H = 4, 1300 at H = 8),
the ``authors`` option is the text's protocol, and its row checks App. H's number (ledger
entries ``apph-550``, ``apph-1300``): the model memorizes that T within 300,000 steps (App. H:
"We train both models for 300,000 optimization steps", Fig. 3: "with perfect memorization").
It is the control run of memorization.authors-capacity's deviations; any departure from the
protocol (fewer steps, another rate or batch) is a deviation of its own (:func:`deviations`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from attnlab.checks import NO_ERROR, Check, at_least, info
from attnlab.config import RunConfig, check_choice, check_int, check_number, param
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.papers.memorization.authors_model import AUTHORS_RELEASED, KEYS
from attnlab.papers.memorization.capacity_cells import STEP_BUDGET, training_work
from attnlab.papers.memorization.model import theorem1_bound, training_bytes
from attnlab.papers.memorization.timed_training import TrainingCell, TrainingRun, train_once, train_sequentially
from attnlab.registry import Experiment, register_experiment
from attnlab.results import PALETTE, ExperimentResult, LineFigure, Table, line_figure, series
from attnlab.runs.rundir import log_metric

EXPERIMENT_ID = "memorization.training-options"
PAPER_STEPS = 300_000  # App. H: "We train both models for 300,000 optimization steps"
PAPER_T_MEMORIZED_H4 = 550  # App. H: about 550 examples memorized at H = 4 (d=64, n=32)
PAPER_T = {4: 550, 8: 1300}  # App. H: "around T = 550" (H = 4), "around T = 1300" (H = 8)
ANCHORS = {4: "memorization.apph-550", 8: "memorization.apph-1300"}
PAPER_SIZE = (64, 32, 64, 100)  # App. H: d, n, d_h, classes
PAPER_LR, PAPER_BATCH = 1e-3, 256  # App. A
OPTIONS = ("authors", "authors-plain", "full-batch-adam", "full-batch-lbfgs",
           "replicates-batched", "replicates-sequential")


@dataclass(frozen=True)
class TrainingOptionsConfig(RunConfig):
    """One cell of Fig. 2(a) (paper notation) and the options that train it (module docstring)."""

    PRESETS = {
        "quick": {"T": 250, "steps": 1500, "fast_lr": 1e-2, "lbfgs_steps": 30, "replicates": 3, "eval_every": 25},
        "paper": {"T": 550, "steps": PAPER_STEPS, "fast_lr": 1e-2, "lbfgs_steps": 2_000, "replicates": 4,
                  "eval_every": 500},
    }

    d: int = param(64, "token dimension d (even: sinusoidal positional encoding)")
    n: int = param(32, "context size n")
    d_h: int | None = param(None, "head size d_h (None: d)")
    d_v: int | None = param(None, "value size d_v per head (None: d_h)")
    H: int = param(4, "number of heads H")
    n_classes: int = param(100, "label classes")
    T: int | None = param(None, "examples in the data set")
    steps: int | None = param(None, "update budget of every Adam option")
    lr: float = param(1e-3, "the authors' Adam learning rate (App. A)")
    batch: int = param(256, "the authors' batch size (App. A)")
    warmup_frac: float = param(0.05, "linear warmup as a fraction of the budget, then cosine decay")
    fast_lr: float | None = param(None, "peak learning rate of full-batch Adam")
    lbfgs_steps: int | None = param(None, "L-BFGS budget in torch.optim.LBFGS steps of up to 20 iterations")
    replicates: int | None = param(None, "models M of the batched / sequential comparison")
    eval_every: int | None = param(None, "updates between train-accuracy checks")
    keys: str = param("all", "the authors' model's keys: all (the query attends to all n + 1 tokens) or "
                             "context (to the n context tokens)")
    options: tuple[str, ...] = param(OPTIONS, "which options to run")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """d_h left None takes d, d_v d_h; options distinct names (one alone: a tuple of one), checked here."""
        v = super().normal_form(values)
        d_h = v["d"] if v["d_h"] is None else v["d_h"]
        options = (v["options"],) if isinstance(v["options"], str) else tuple(v["options"])
        if not options or any(o not in OPTIONS for o in options) or len(set(options)) != len(options):
            raise ConfigError(f"options must be distinct names among {', '.join(OPTIONS)}, got {v['options']!r}")
        return {**v, "d_h": d_h, "d_v": d_h if v["d_v"] is None else v["d_v"], "options": options}

    def validate(self) -> None:
        for name, minimum in (("d", 2), ("n", 2), ("d_h", 1), ("d_v", 1), ("H", 1), ("n_classes", 2),
                              ("T", 1), ("steps", 2), ("batch", 1), ("lbfgs_steps", 1), ("replicates", 1),
                              ("eval_every", 1)):
            check_int(name, getattr(self, name), minimum)
        if self.d % 2:
            raise ConfigError(f"d must be even (sinusoidal positional encoding), got {self.d}")
        for name in ("lr", "fast_lr"):
            check_number(name, getattr(self, name), 0, open_min=True)
        check_number("warmup_frac", self.warmup_frac, 0, 1, open_max=True)
        check_choice("keys", self.keys, KEYS)

    def estimate(self) -> Estimate:
        """The largest training: ``replicates`` models at once (or one, full-batch L-BFGS keeping
        its history) on the T examples of one shared context, float32 (:func:`training_bytes`)."""
        runs = [training_bytes(self.replicates, self.T, self.H, self.n, self.d, self.d_h, self.n_classes,
                               shared_context=True, embedded=True),
                training_bytes(1, self.T, self.H, self.n, self.d, self.d_h, self.n_classes, shared_context=True,
                               embedded=True, lbfgs=True)]
        return Estimate(max(runs), f"training {self.replicates} models at H = {self.H} on T = {self.T} examples",
                        **self.work(), change="lower T, H or replicates", time_bound=STEP_BUDGET)

    def work(self) -> dict[str, float]:
        """Every option of ``options`` at its budget (:func:`training_work`, float32, one shared
        context; the authors' model embedded, "authors-plain" eqs. (1)-(6)): Adam ``steps`` updates
        on B = minibatch examples (full batch: T) of 1 model, or ``replicates`` models batched or one
        after another, with steps / eval_every evaluations; L-BFGS lbfgs_steps steps of 20
        iterations with an evaluation after each. Summed over the options; an upper bound, since
        every option stops once its models have memorized."""
        out: dict[str, float] = {}
        plain = dict(shared_context=True, d_v=self.d_v)
        adam = dict(steps=self.steps, evals=max(1, self.steps // self.eval_every), **plain)
        for option in self.options:
            M, model, batch, kw = 1, "authors", self.minibatch, adam
            if option == "authors-plain":
                model = "plain"
            elif option == "full-batch-adam":
                batch = None
            elif option == "full-batch-lbfgs":
                batch, kw = None, dict(steps=self.lbfgs_steps, evals=self.lbfgs_steps, optimizer="lbfgs", **plain)
            elif option in ("replicates-batched", "replicates-sequential"):
                M = self.replicates
            w = training_work(M, self.T, self.H, self.n, self.d, self.d_h, self.n_classes, batch=batch,
                              embedded=model == "authors", **kw)
            if option == "replicates-sequential":  # M runs of one model: M times the fixed costs
                w["calls"] *= M
            out = {k: out.get(k, 0.0) + v for k, v in w.items()}
        return out

    @property
    def bound(self) -> int:
        """Theorem 1's T = H (min(n, d_h) - 1) + 1."""
        return theorem1_bound(self.H, self.n, self.d_h)

    @property
    def minibatch(self) -> int | None:
        """The authors' batch, or None (full batch) when it covers the data set."""
        return None if self.batch >= self.T else self.batch

    @property
    def cell(self) -> TrainingCell:
        """The cell every option trains, with its warmup, checks, seed and device."""
        return TrainingCell(T=self.T, n=self.n, d=self.d, d_h=self.d_h, d_v=self.d_v, H=self.H,
                            n_classes=self.n_classes, keys=self.keys, warmup_frac=self.warmup_frac,
                            eval_every=self.eval_every, seed=self.seed, device=self.device)


# --------------------------------------------------------------------------------------
# one option's training run (:mod:`attnlab.papers.memorization.timed_training`)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class OptionRun(TrainingRun):
    """One training option (module docstring) and its :class:`TrainingRun` of M = ``models`` models."""

    option: str  # the option's name, one of OPTIONS
    models: int  # M: models trained (replicates, or 1)

    def to_dict(self) -> dict:
        """The stored run: option, models, then the TrainingRun fields in order."""
        return {"option": self.option, "models": self.models, "steps_to_100": self.steps_to_100,
                "wall_s": self.wall_s, "final_accuracy": self.final_accuracy,
                "initial_accuracy": self.initial_accuracy, "curve_t": self.curve_t, "curve_acc": self.curve_acc}


def run_option(cfg: TrainingOptionsConfig, option: str) -> OptionRun:
    """Train one option (module docstring) and return its measurements."""
    authors = dict(optimizer="adam", lr=cfg.lr, batch=cfg.minibatch, steps=cfg.steps)
    reps, cell = list(range(cfg.replicates)), cfg.cell
    if option == "authors":
        out = train_once(cell, [0], model="authors", **authors)
    elif option == "authors-plain":
        out = train_once(cell, [0], model="plain", **authors)
    elif option == "full-batch-adam":
        out = train_once(cell, [0], model="authors", optimizer="adam", lr=cfg.fast_lr, batch=None, steps=cfg.steps)
    elif option == "full-batch-lbfgs":
        out = train_once(cell, [0], model="authors", optimizer="lbfgs", lr=1.0, batch=None, steps=cfg.lbfgs_steps)
    elif option == "replicates-batched":
        out = train_once(cell, reps, model="authors", **authors)
    elif option == "replicates-sequential":
        out = train_sequentially(cell, reps, model="authors", **authors)
    else:
        raise ConfigError(f"unknown option {option!r}: use one of {', '.join(OPTIONS)}")
    return OptionRun(**asdict(out), option=option, models=len(out.steps_to_100))


# --------------------------------------------------------------------------------------
# the experiment
# --------------------------------------------------------------------------------------
LABELS = {
    "authors": "authors' protocol, authors' architecture (emb + PE + attention)",
    "authors-plain": "authors' protocol, plain eqs. (1)-(6) model",
    "full-batch-adam": "full-batch Adam, larger lr, authors' model",
    "full-batch-lbfgs": "full-batch L-BFGS, authors' model",
    "replicates-batched": "M replicates at once (vmap), authors' protocol",
    "replicates-sequential": "M replicates one at a time, authors' protocol",
}


def _settings(cfg: TrainingOptionsConfig, option: str) -> str:
    batch = "full batch" if cfg.minibatch is None else f"batch {cfg.minibatch}"
    if option == "full-batch-adam":
        return f"Adam peak lr {cfg.fast_lr:g}, full batch, warmup {cfg.warmup_frac:.0%} + cosine, {cfg.steps} steps"
    if option == "full-batch-lbfgs":
        return f"L-BFGS lr 1, strong Wolfe, history 100, full batch, {cfg.lbfgs_steps} steps of <= 20 iterations"
    return f"Adam peak lr {cfg.lr:g}, {batch}, warmup {cfg.warmup_frac:.0%} + cosine, {cfg.steps} steps"


def _warm_up(cfg: TrainingOptionsConfig) -> None:
    """Two untimed updates per model and optimizer, so one-time costs (first vmap
    trace, allocator, lazy imports) are not charged to whichever option runs first."""
    small = dict(steps=2, batch=None)
    for model in ("authors", "plain"):
        train_once(cfg.cell, [0], model=model, optimizer="adam", lr=cfg.lr, **small)
    if "full-batch-lbfgs" in cfg.options:
        train_once(cfg.cell, [0], model="authors", optimizer="lbfgs", lr=1.0, steps=1, batch=None)


def run(cfg: TrainingOptionsConfig, run_dir=None) -> ExperimentResult:
    _warm_up(cfg)
    runs = []
    for option in cfg.options:
        run = run_option(cfg, option)
        runs.append(run)
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, **{k: v for k, v in run.to_dict().items()
                                                             if not k.startswith("curve")}})
    return ExperimentResult(summary=_summary(cfg, runs), tables=[_table(cfg, runs)], figures=[_figure(cfg, runs)],
                            notes=_notes(cfg, runs),
                            data={"T": cfg.T, "bound": cfg.bound, "batch": cfg.minibatch,
                                  "runs": [run.to_dict() for run in runs]},
                            deviations=deviations(cfg))


def released(cfg: TrainingOptionsConfig) -> bool:
    """The model is the authors' as released: one value dimension per head, the query's own key masked."""
    return cfg.d_v == AUTHORS_RELEASED["d_v"] and cfg.keys == AUTHORS_RELEASED["keys"]


def deviations(cfg: TrainingOptionsConfig) -> list[Deviation]:
    """How the authors' option departs from App. H's run: another model, another size or T, another rate or
    batch, fewer steps. The other options compare optimizers on the same cell (info rows)."""
    out = []
    if not released(cfg):
        out.append(Deviation("another-model", "model",
                             f"d_v={cfg.d_v} per head, keys={cfg.keys!r}; the released model has d_v=1 and masks the "
                             "query's own key", "compares optimizers on one architecture",
                             control="--set d_v=1 --set keys=context"))
    if (cfg.d, cfg.n, cfg.d_h, cfg.n_classes) != PAPER_SIZE or PAPER_T.get(cfg.H) != cfg.T:
        out.append(Deviation("size", "size",
                             f"d={cfg.d}, n={cfg.n}, d_h={cfg.d_h}, {cfg.n_classes} classes, H={cfg.H}, T={cfg.T}; App. "
                             "H: d=64, n=32, d_h=64, 100 classes, T=550 at H=4 and T=1300 at H=8",
                             "a cell that trains in minutes", control="--set H=4 --set T=550 (or H=8, T=1300)"))
    if (cfg.lr, cfg.batch) != (PAPER_LR, PAPER_BATCH):
        out.append(Deviation("optimizer", "optimizer", f"Adam lr {cfg.lr:g}, batch {cfg.batch}; App. A: lr 1e-3, "
                                                       "batch 256", "set by --set lr / batch",
                             control="--set lr=0.001 --set batch=256"))
    if cfg.steps < PAPER_STEPS:
        out.append(Deviation("step-budget", "budget", f"{cfg.steps:,} updates; App. H trains {PAPER_STEPS:,}",
                             "a budget that fits the machine", control=f"--set steps={PAPER_STEPS}"))
    return out


def app_h_row(cfg: TrainingOptionsConfig, run: "OptionRun") -> Check:
    """App. H's number, like for like: the authors' protocol on the released model memorizes App. H's T
    at this H (final train accuracy 100%) within its budget; a row touched by any of :func:`deviations`
    is inconclusive (no control). A success bounds T* from below only; the row checks what App. H states
    it trained: perfect memorization of T = 550 / 1300 after 300,000 steps."""
    acc = float(run.final_accuracy[0])
    return at_least(acc, 1.0,
                    f"Adam lr {cfg.lr:g}, batch {cfg.batch}, warmup {cfg.warmup_frac:.0%} + cosine, {cfg.steps:,} "
                    f"steps; memorized at update {_steps_text(run.steps_to_100)}",
                    {"steps_to_100": run.steps_to_100[0], "final_accuracy": acc},
                    quantity=f"train accuracy of the released model after the authors' protocol, H={cfg.H}, "
                             f"T={cfg.T}",
                    paper_value=f"T={cfg.T} memorized after {PAPER_STEPS:,} steps", where="App. H, Fig. 3",
                    deviations=tuple(d.id for d in deviations(cfg)), anchor=ANCHORS[cfg.H], erratum=NO_ERROR,
                    falsifier=f"the released model ends short of 100% train accuracy at T={cfg.T} after the "
                              f"authors' {PAPER_STEPS:,} steps")


def _steps_text(steps: list[int]) -> str:
    return ", ".join(str(s) if s >= 0 else "-" for s in steps)


def _summary(cfg: TrainingOptionsConfig, runs: list[OptionRun]) -> list[Check]:
    """Descriptive rows (info): how each option trains the cell; and, on the released model at App. H's T,
    the like-for-like row of App. H's number (:func:`app_h_row`). The quick scale's T = 250 is no number
    of the text."""
    rows = [app_h_row(cfg, run) for run in runs if run.option == "authors" and cfg.H in PAPER_T
            and cfg.T == PAPER_T[cfg.H] and released(cfg)]
    for run in runs:
        budget = cfg.lbfgs_steps if "lbfgs" in run.option else cfg.steps
        rows.append(info(
            f"updates to 100% train accuracy: {LABELS[run.option]} (T={cfg.T}, H={cfg.H}, d_v={cfg.d_v}, "
            f"keys={cfg.keys})", _steps_text(run.steps_to_100),
            paper_value=f"T={PAPER_T_MEMORIZED_H4} memorized within {PAPER_STEPS:,} steps" if run.option == "authors"
            else None, where="App. A, App. H",
            detail=f"budget {budget} updates ('-': not memorized); {run.wall_s:.1f} s wall; final accuracy "
                   + ", ".join(f"{a:.3f}" for a in run.final_accuracy),
            values={"steps_to_100": run.steps_to_100, "final_accuracy": run.final_accuracy,
                    "wall_s": run.wall_s}))
    by = {run.option: run for run in runs}
    if {"replicates-batched", "replicates-sequential"} <= set(by):
        b, s = by["replicates-batched"], by["replicates-sequential"]
        rows.append(info(f"wall-time speed-up of {b.models} replicates at once over one at a time",
                         s.wall_s / b.wall_s,
                         detail=f"{b.wall_s:.1f} s at once vs {s.wall_s:.1f} s one at a time; same models: "
                                f"steps to 100% {_steps_text(b.steps_to_100)} vs {_steps_text(s.steps_to_100)}"))
    return rows


def _table(cfg: TrainingOptionsConfig, runs: list[OptionRun]) -> Table:
    rows = [[run.option, _settings(cfg, run.option), run.models, _steps_text(run.steps_to_100),
             run.wall_s, run.wall_s / run.models, float(np.mean(run.final_accuracy))] for run in runs]
    return Table(f"Training options on one cell: d={cfg.d}, n={cfg.n}, d_h={cfg.d_h}, d_v={cfg.d_v}, "
                 f"H={cfg.H}, T={cfg.T} (bound {cfg.bound}), {cfg.n_classes} classes, shared context",
                 ["option", "settings", "models", "updates to 100%", "wall s", "wall s per model",
                  "mean final accuracy"],
                 rows, ["text", "text", "int", "text", "float", "float", "float"])


def _figure(cfg: TrainingOptionsConfig, runs: list[OptionRun]) -> LineFigure:
    lines = [series(f"{run.option} (M={run.models})" if run.models > 1 else run.option,
                    run.curve_t, run.curve_acc, color=PALETTE[i % len(PALETTE)],
                    style="dashed" if run.option.startswith("replicates") else "solid")
             for i, run in enumerate(runs)]
    return line_figure("memorization-training-options.png",
                       f"Train accuracy against wall time, one curve per training option (mean over the M "
                       f"replicates where M > 1), d={cfg.d}, n={cfg.n}, d_h={cfg.d_h}, H={cfg.H}, T={cfg.T}, "
                       f"{cfg.n_classes} classes, shared context; each run stops at 100% train accuracy.",
                       series=lines, xlabel="wall time (s)", ylabel="train accuracy",
                       title="Training options for memorization (App. A, H)")


def _notes(cfg: TrainingOptionsConfig, runs: list[OptionRun]) -> list[str]:
    notes = [
        ("The paper (App. A) trains with Adam, lr 1e-3, batch 256, linear warmup then cosine decay, for at "
         "least 500 epochs and 50k steps; App. H trains 300k steps and memorizes about 550 examples at H=4 "
         "(d=64, n=32, d_h=64, 100 classes); all sweeps took about 20 V100 GPU-days. Here every option stops "
         f"at 100% train accuracy (checked every {cfg.eval_every} updates) or at its budget."),
        ("The authors' model: linear embedding (with bias) + sinusoidal positional encoding (pos_0 for the "
         f"query, pos_1..pos_n for the context) + one attention layer read out at the query token; keys="
         f"{cfg.keys!r}; logits scaled by 1/sqrt(d) as in the authors' code (eq. (1) has no scale). "
         f"d_v={cfg.d_v} per head. The released model has d_v=1 and keys='context' "
         "(memorization.authors-capacity searches it); the defaults here keep d_v = d_h and keys='all', so this "
         "experiment compares optimizers on one architecture, not the paper's numbers. With --set d_v=1 --set "
         "keys=context at App. H's T (H=4, T=550 or H=8, T=1300) and the paper preset, the authors' option is "
         "App. H's run, like for like, and its row decides App. H's number."),
        ("Wall times include the train-accuracy evaluations and are measured on whatever else the machine "
         "is running; compare options within one run."),
    ]
    if cfg.minibatch is None:
        notes.append(f"T={cfg.T} <= batch {cfg.batch}: the authors' batch is the whole data set, so their "
                     "protocol is full-batch Adam at lr 1e-3 here (as their DataLoader would give).")
    if any("lbfgs" in run.option for run in runs):
        notes.append("An L-BFGS update is one torch.optim.LBFGS step: up to 20 iterations (at most 25 loss and "
                     "gradient evaluations) with a strong-Wolfe line search, history 100; accuracy is checked "
                     "after every step. (With max_iter=1, torch's evaluation cap max_eval = 1 stops every "
                     "step before it moves: the loss stays at its initial value.)")
    if any(run.option == "replicates-batched" for run in runs):
        notes.append("Replicates at once keep computing models that already stopped (their parameters are "
                     "frozen) until the last one stops; one at a time, each stops on its own.")
    return notes


register_experiment(Experiment(EXPERIMENT_ID,
                    "Training options for memorization: the authors' protocol and model vs full-batch Adam, "
                    "L-BFGS and batched replicates, steps and wall time to 100% train accuracy",
                    TrainingOptionsConfig, run, anchors=tuple(ANCHORS.values())))
