"""transformer-math.scaling: why 1/sqrt(d_k), measured by training (math text §1.2.3).

§1.2.3 motivates the factor 1/sqrt(k) by saturation: unscaled logits q.k grow like
sqrt(d), the softmax approaches one-hot (eq. 9), its Jacobian (eq. 8) vanishes and
so does the gradient reaching the logits. Here that is measured in training. One run
= one d_head and one seed: two models with the same initial weights, trained on the
same batches, differing only in the logit scale c,

    scaled:    z = q K^T / sqrt(d_head)        unscaled:  z = q K^T     (c = 1)

on the positional-copy task (:mod:`attnlab.tasks.copy`): context tokens t_1..t_n,
a query naming position p, target t_p. The model
(:class:`attnlab.papers.transformer_math.scaling_model.CopyAttention`) is one
attention head between an embedding and a readout.

Measured every ``eval_every`` steps on a fixed held-out batch, per model: loss,
accuracy, the mean entropy H(a) of the attention weights a = softmax(z), and the
mean norm of the gradient through the softmax, ||dl_i/dz_i|| (l_i the example's
cross-entropy, z_i its softmax input), streamed to metrics.jsonl.

steps_to_threshold: the first evaluated step whose held-out loss is <= loss_threshold;
``steps + 1`` when the budget ends first (``*_reached_threshold`` is then False),
so the column stays numeric and a mean over seeds is a lower bound. Training stops
early once both models have reached the threshold (``stop_at_threshold``).

``attnlab reproduce`` runs this as a sweep over d_head and seeds
(:func:`reproduce_plan`) and reports :func:`aggregate` of the sweep's rows. The pair's training and its
numbers live in :mod:`attnlab.papers.transformer_math.scaling_training`, the sweep's rows read back and
summarised over seeds, and the task-free control, in :mod:`attnlab.papers.transformer_math.scaling_sweep`.

Deviation (:data:`COPY_TASK`): §1.2.3 argues without an experiment, so the model, the task and the
optimiser are attnlab's. The two rows read at initialisation (entropy, gradient at the logits) are
also measured with the task removed (random queries and keys of the same width and count, a random
upstream gradient) and are decided when that control gives their verdict; steps to learn need a
task, so that row has no control and is inconclusive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from attnlab.config import RunConfig, check_bool, check_choice, check_int, check_number, param
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.papers.transformer_math.scaling_sweep import Stat, SweepRun, VariantStats, by_d_head, task_free
from attnlab.papers.transformer_math.scaling_training import VARIANTS, scalars_of, train_pair, variant_scalars
from attnlab.registry import Experiment, SweepPlan, register_experiment
from attnlab.checks import NO_ERROR, Bound, Check, above, below, compare, info
from attnlab.results import PALETTE, ExperimentResult, LineFigure, Series, Table, line_figure, series
from attnlab.runs.rundir import RunDir, log_metric

EXPERIMENT_ID = "transformer-math.scaling"
TORCH_OP = 0.1  # one torch op on small tensors, in small calls (~20 us against the 32 x 64 SVD's ~0.2 ms)
STEP_OPS = 150  # torch ops of one model's step: batch, forward, backward, Adam (fitted to the quick preset)
EVAL_OPS = 150  # torch ops of one model's held-out measure (loss, accuracy, entropy, per-example gradients)
COPY_TASK = Deviation(
    "copy-task", "data",
    "one attention head between an embedding and a readout, trained by Adam on attnlab's positional-copy task (n "
    "context tokens and a query naming a position; the target is the token there); the initial rows read it at "
    "step 0",
    "§1.2.3 argues without an experiment: it gives no model, task or optimiser; a task the head can only solve by "
    "attending isolates the logit scale",
    control="in the same report: the initial rows with the task removed (queries and n keys with N(0, 1) entries of "
            "width d_head, a random unit upstream gradient: the softmax at initialisation without the task); steps "
            "to learn need a task, so that row has no control")
SWEEPS = {"quick": SweepPlan(grid={"d_head": [8, 16, 32, 64, 128]}, seeds=3),
          "paper": SweepPlan(grid={"d_head": [8, 16, 32, 64, 128, 256, 512]}, seeds=5)}


@dataclass(frozen=True)
class ScalingConfig(RunConfig):
    """One run: the scaled and the unscaled model at one d_head and one seed."""

    PRESETS = {
        "quick": {"n": 8, "V": 16, "steps": 400, "lr": 5e-3, "batch": 64, "eval_every": 10, "eval_batch": 256},
        "paper": {"n": 16, "V": 32, "steps": 2000, "lr": 3e-3, "batch": 128, "eval_every": 20, "eval_batch": 2048},
    }

    d_head: int = param(64, "key/query dimension d_k of the head")
    d_model: int | None = param(None, "embedding width (None: tied to d_head)")
    n: int | None = param(None, "context length n")
    V: int | None = param(None, "vocabulary size V")
    steps: int | None = param(None, "Adam steps (the budget)")
    lr: float | None = param(None, "Adam learning rate")
    batch: int | None = param(None, "training examples per step")
    eval_every: int | None = param(None, "steps between held-out evaluations")
    eval_batch: int | None = param(None, "held-out examples (one fixed batch)")
    loss_threshold: float = param(0.1, "held-out loss that counts as learned (steps_to_threshold)")
    logit_init_scale: float = param(1.0, "s: W_Q, W_K ~ N(0, s^2/d_model), so Var(q.k) = s^4 d_head at init")
    stop_at_threshold: bool = param(True, "stop once both models reached loss_threshold (final_* then at that step)")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """d_model left None takes d_head."""
        v = super().normal_form(values)
        if v["d_model"] is None:
            v["d_model"] = v["d_head"]
        return v

    def validate(self) -> None:
        for name, minimum in (("d_head", 1), ("d_model", 1), ("n", 2), ("V", 2), ("steps", 1),
                              ("batch", 1), ("eval_every", 1), ("eval_batch", 1)):
            check_int(name, getattr(self, name), minimum=minimum)
        for name in ("lr", "loss_threshold", "logit_init_scale"):
            check_number(name, getattr(self, name), 0, open_min=True)
        check_bool("stop_at_threshold", self.stop_at_threshold)

    def estimate(self) -> Estimate:
        """Two one-head models (scaled, unscaled) in float32, B = max(batch, eval_batch) examples
        of n tokens: activations with their gradients, 3 x 4 bytes x 2 B n (d_model + 3 d_head
        + n + V) (embeddings, q k v, the n x n attention, the logits), and the weights with
        their gradients and Adam's moments, 4 x 4 bytes x 2 (2 V d_model + 3 d_model d_head).

        Time, per model (2), at the step budget (an upper bound: training stops once both reach
        loss_threshold), D = d_model, d = d_head, F = 2 n (V D + 3 D d + 2 n d + d D) per example,
        E = steps / eval_every + 1 evaluations:
            gemm     2 (3 steps batch + 3 E eval_batch) F         (forward + backward = 3 forwards)
            traffic  2 x 80 (steps batch + E eval_batch) n (D + 3 d + n + V)
            calls    2 TORCH_OP (steps STEP_OPS + E EVAL_OPS)"""
        B = max(self.batch, self.eval_batch)
        acts = 12 * 2 * B * self.n * (self.d_model + 3 * self.d_head + self.n + self.V)
        weights = 16 * 2 * (2 * self.V * self.d_model + 3 * self.d_model * self.d_head)
        D, d, n, V = self.d_model, self.d_head, self.n, self.V
        f_ex = 2.0 * n * (V * D + 3 * D * d + 2 * n * d + d * D)  # embedding, q k v, scores, mixing, readout
        evals = self.steps // self.eval_every + 1
        gemm = 2 * (3 * self.steps * self.batch + 3 * evals * self.eval_batch) * f_ex
        traffic = 4 * 2 * 20 * (self.steps * self.batch + evals * self.eval_batch) * n * (D + 3 * d + n + V)
        calls = TORCH_OP * 2 * (self.steps * STEP_OPS + evals * EVAL_OPS)
        return Estimate(acts + weights, f"{B} examples of n = {self.n} tokens, V = {self.V}, d_model = "
                                        f"{self.d_model}, float32", gemm=gemm, traffic=traffic, calls=calls,
                        change="lower n, V, d_model or the batches",
                        time_bound="the step budget: training stops at the loss threshold")




def run(cfg: ScalingConfig, run_dir: RunDir | None = None) -> ExperimentResult:
    """One sweep run: one d_head, one seed, both models; its scalars are one row of the sweep."""
    history = train_pair(cfg, lambda rec: log_metric(run_dir, {"experiment": EXPERIMENT_ID, **rec}))
    per = {k: variant_scalars(cfg, h) for k, h in history.items()}
    sc = scalars_of(cfg, history)
    colors = {"scaled": PALETTE[0], "unscaled": PALETTE[1]}
    label = {"scaled": "c = 1/sqrt(d_head)", "unscaled": "c = 1"}
    fig = line_figure(
        "scaling-training-curves.png",
        f"Held-out loss during training at d_head={cfg.d_head}, seed {cfg.seed}: the same init and "
        f"batches, with and without 1/sqrt(d_head); dashed: loss threshold {cfg.loss_threshold:g}.",
        series=[series(label[k], h.step, h.loss, color=colors[k], marker=False) for k, h in history.items()]
        + [series("threshold", [0, cfg.steps], [cfg.loss_threshold] * 2, style="dashed", marker=False,
                  color="#777777")],
        xlabel="step", ylabel="held-out cross-entropy", yscale="log", title="Training with and without 1/sqrt(d)")
    summary = [info(f"{k}: steps to loss <= {cfg.loss_threshold:g}",
                    per[k].steps_to_threshold if per[k].reached_threshold
                    else Bound.at_least(cfg.steps + 1, f"not reached within the {cfg.steps}-step budget"),
                    where="§1.2.3", detail=f"final loss {per[k].final_loss:.3g}") for k in history]
    data = {"history": {k: h.to_dict() for k, h in history.items()}}
    return ExperimentResult(summary=summary, figures=[fig], data=data, scalars=sc)


def reproduce_plan(scale: str) -> SweepPlan:
    """The d_head x seeds sweep ``attnlab reproduce`` runs at ``scale``."""
    return SWEEPS[check_choice("scale", scale, tuple(SWEEPS))]




def aggregate(rows: list[dict[str, Any]]) -> ExperimentResult:
    """Summary rows, a per-d_head table and three figures from the sweep's table rows."""
    groups = by_d_head(rows)
    if not groups:
        raise ConfigError("the scaling sweep has no finished run to aggregate; rerun with --resume")
    dims = list(groups)
    stats = {k: VariantStats.of([groups[d] for d in dims], k) for k in VARIANTS}
    reached = {k: [sum(bool(r.variant(k).reached_threshold) for r in groups[d]) for d in dims] for k in VARIANTS}
    first = groups[dims[0]][0]
    steps, thr, n = first.steps, first.loss_threshold, first.n
    table_rows = []
    for i, d in enumerate(dims):
        K = len(groups[d])
        cell = {k: f"{stats[k].steps_to_threshold[i].mean:.0f} ({stats[k].steps_to_threshold[i].min:.0f}"
                   f"-{stats[k].steps_to_threshold[i].max:.0f})" for k in VARIANTS}
        table_rows.append([d, K, cell["scaled"], cell["unscaled"], f"{reached['scaled'][i]}/{K}",
                           f"{reached['unscaled'][i]}/{K}"]
                          + [stats[k].initial_grad_norm[i].mean for k in VARIANTS]
                          + [stats[k].initial_entropy[i].mean for k in VARIANTS])
    table = Table(f"Steps to held-out loss <= {thr:g} (mean, min-max over seeds; {steps + 1} = not reached)",
                  ["d_head", "seeds", "scaled steps", "unscaled steps", "scaled reached", "unscaled reached",
                   "init ||dl/dz|| scaled", "unscaled", "init entropy scaled", "unscaled"], table_rows,
                  ["int", "int", "text", "text", "text", "text", "float", "float", "float", "float"])
    control = task_free(dims[-1], n)
    return ExperimentResult(
        summary=_summary(dims, stats, reached, groups, steps, thr, control), tables=[table], deviations=[COPY_TASK],
        figures=_figures(dims, stats, steps, thr, n),
        notes=[f"One run trains two models from the same init on the same batches (Adam, {steps} steps), "
               "one with c = 1/sqrt(d_head), one with c = 1; d_model is tied to d_head unless set.",
               f"steps to threshold: first evaluated step with held-out loss <= {thr:g}; "
               f"{steps + 1} when never reached, so means over seeds are lower bounds.",
               "||dl/dz||: mean over held-out examples of the norm of the gradient of the example's "
               "loss with respect to its attention logits z (the softmax input)."],
        data={"d_head": dims, "stats": {k: s.to_dict() for k, s in stats.items()}, "reached": reached,
              "seeds": {d: len(g) for d, g in groups.items()}, "task_free": control})


WHERE = "§1.2.3 (\"it leads to more stable gradients\")"
STABLE = "transformer-math.scale-stable-gradients"  # "it leads to more stable gradients"
SATURATE = "transformer-math.large-inputs-saturate"  # "for large inputs ... resemble the values in (9)"
RESCALE = "transformer-math.rescale-dot-products"  # "the vanishing gradient ... necessary to rescale"


def _summary(dims: Sequence[int], stats: dict[str, VariantStats], reached: dict[str, list[int]],
             groups: dict[int, list[SweepRun]], steps: int, thr: float, control: dict[str, float]) -> list[Check]:
    """The text's three effects at the largest d_head, as ratios unscaled / scaled of the means
    over seeds, and whether every scaled run learned within the budget (attnlab's task and
    training must be learnable: a sanity check of attnlab's setup).

    A run that never reaches the threshold counts steps + 1, a lower bound; a mean over such runs
    is one too. With every scaled run exact, unscaled / scaled is then a lower bound (it decides
    "> 1" when the bound does); with a censored scaled run the ratio is not measured.

    The task is attnlab's (:data:`COPY_TASK`): the two initial rows carry the task-free ratios of
    :func:`task_free` as their control when those give the same verdict; the steps row has none."""
    i, d = len(dims) - 1, dims[-1]
    K = len(groups[d])
    sc, un = stats["scaled"], stats["unscaled"]
    ent = un.initial_entropy[i].mean / sc.initial_entropy[i].mean
    grad = un.initial_grad_norm[i].mean / sc.initial_grad_norm[i].mean
    slow = un.steps_to_threshold[i].mean / sc.steps_to_threshold[i].mean
    cannot = ""
    if reached["scaled"][i] < K:
        cannot = f"the scaled model missed the threshold in {K - reached['scaled'][i]}/{K} seeds (censored)"
    elif reached["unscaled"][i] < K:
        slow = Bound.at_least(slow, f"the unscaled model missed the threshold in {K - reached['unscaled'][i]}/{K} "
                                    f"seeds, counted as {steps + 1} steps")
    runs = sum(len(g) for g in groups.values())
    free = (f"without the task (N(0, 1) queries and {control['n']} keys of width {control['d_head']}, "
            f"{control['queries']} queries, a random unit upstream gradient)")

    def controlled(value: float, task_free_value: float, what: str) -> dict:
        same = (value < 1) == (task_free_value < 1)
        said = f"{free}: {what} {task_free_value:.3g}, required < 1 -> {'the same' if same else 'another'} verdict"
        return {"control": said} if same else {"detail": f"mean over {K} seeds; control: {said}"}

    return [
        below(ent, 1, quantity=f"initial attention entropy at d_head={d}: unscaled / scaled", where=WHERE,
              paper_value="softmax saturates without 1/sqrt(k)", anchor=SATURATE, deviations=(COPY_TASK.id,),
              falsifier="the unscaled model's initial attention entropy no lower than the scaled one's (ratio >= 1)",
              erratum=NO_ERROR, **{"detail": f"mean over {K} seeds",
                                   **controlled(ent, control["entropy"], "mean entropy unscaled / scaled")}),
        below(grad, 1, quantity=f"initial ||dl/dz|| at d_head={d}: unscaled / scaled", where=WHERE,
              paper_value="gradient vanishes without 1/sqrt(k)", anchor=RESCALE, deviations=(COPY_TASK.id,),
              falsifier="the unscaled model's initial gradient at the logits no smaller than the scaled one's "
                        "(ratio >= 1)", erratum=NO_ERROR,
              **{"detail": f"mean over {K} seeds",
                 **controlled(grad, control["gradient"], "mean ||J_s^T g|| unscaled / scaled")}),
        above(slow, 1, quantity=f"mean steps to loss <= {thr:g} at d_head={d}: unscaled / scaled", where=WHERE,
              paper_value="more stable gradients with 1/sqrt(k)", cannot_decide=cannot,
              detail=f"unscaled reached the threshold in {reached['unscaled'][i]}/{K} seeds, scaled in "
                     f"{reached['scaled'][i]}/{K}; learning needs a task, and the task is attnlab's: no control "
                     "without it", anchor=STABLE, deviations=(COPY_TASK.id,),
              falsifier="the unscaled model learning in no more steps than the scaled one (ratio <= 1)",
              erratum=NO_ERROR),
        compare(f"scaled runs reaching loss <= {thr:g} within {steps} steps", sum(reached["scaled"]), "==", runs,
                role="sanity", where="§1.2.3", detail=f"d_head = {', '.join(map(str, dims))}; attnlab's task and "
                "training must be learnable (a check of attnlab's setup, not of the text)"),
    ]


def _figures(dims: Sequence[int], stats: dict[str, VariantStats], steps: int, thr: float, n: int) -> list[LineFigure]:
    """Steps to the threshold, the initial gradient at the logits and the initial entropy against d_head."""
    color = {"scaled": PALETTE[0], "unscaled": PALETTE[1]}
    label = {"scaled": "c = 1/sqrt(d_head)", "unscaled": "c = 1"}

    def lines(of: Callable[[VariantStats], list[Stat]], spread: bool) -> list[Series]:
        out = []
        for k in VARIANTS:
            s = of(stats[k])
            out.append(series(f"{label[k]} (mean)", dims, [x.mean for x in s], color=color[k]))
            if spread:
                out += [series(f"{label[k]} (min over seeds)", dims, [x.min for x in s], style="dotted",
                               marker=False, color=color[k]),
                        series(f"{label[k]} (max over seeds)", dims, [x.max for x in s], style="dotted",
                               marker=False, color=color[k])]
        return out

    budget = series(f"not reached ({steps + 1})", dims, [steps + 1] * len(dims), style="dashed", marker=False,
                    color="#777777")
    uniform = series(f"log n = {math.log(n):.3f} (uniform)", dims, [math.log(n)] * len(dims), style="dashed",
                     marker=False, color="#777777")
    return [
        line_figure("scaling-steps-to-threshold.png",
                    f"Training steps until the held-out loss is <= {thr:g}, against d_head, with and without "
                    "1/sqrt(d_head): mean over seeds (solid) and the range (dotted).",
                    series=lines(lambda s: s.steps_to_threshold, True) + [budget], xlabel="d_head", ylabel="steps",
                    xscale="log", yscale="log", title="Steps to learn positional copy"),
        line_figure("scaling-initial-gradient.png",
                    "Mean norm of the gradient of an example's loss with respect to its attention logits "
                    "(through the softmax) at initialisation, against d_head.",
                    series=lines(lambda s: s.initial_grad_norm, False), xlabel="d_head",
                    ylabel=r"mean $\|\partial l/\partial z\|$", xscale="log", yscale="log",
                    title="Gradient through softmax at init"),
        line_figure("scaling-initial-entropy.png",
                    "Mean entropy of the attention weights at initialisation, against d_head; "
                    "0 is one-hot (saturated).",
                    series=lines(lambda s: s.initial_entropy, False) + [uniform], xlabel="d_head", ylabel="entropy (nats)",
                    xscale="log", title="Attention entropy at init"),
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "§1.2.3 by training: steps to learn positional copy with and without 1/sqrt(d_head)",
                    ScalingConfig, run, reproduce_sweep=reproduce_plan, aggregate=aggregate,
                    anchors=(STABLE, SATURATE, RESCALE)))
