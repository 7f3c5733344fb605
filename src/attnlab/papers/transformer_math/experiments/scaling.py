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
(:func:`reproduce_plan`) and reports :func:`aggregate` of the sweep's rows.
"""

from __future__ import annotations

from typing import Any, Sequence

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.config import RunConfig, check_bool, check_choice, check_int, check_number, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.papers.transformer_math.scaling_model import CopyAttention, measure
from attnlab.registry import Experiment, SweepPlan, register_experiment
from attnlab.checks import Bound, Check, above, below, compare, info
from attnlab.results import PALETTE, ExperimentResult, LineFigure, Series, Table, line_figure, series
from attnlab.runs.rundir import log_metric
from attnlab.tasks import copy_batch

EXPERIMENT_ID = "transformer-math.scaling"
TORCH_OP = 0.1  # one torch op on small tensors, in small calls (~20 us against the 32 x 64 SVD's ~0.2 ms)
STEP_OPS = 150  # torch ops of one model's step: batch, forward, backward, Adam (fitted to the quick preset)
EVAL_OPS = 150  # torch ops of one model's held-out measure (loss, accuracy, entropy, per-example gradients)
VARIANTS = {"scaled": "1/sqrt(d)", "unscaled": "none"}  # name -> scale of attention_logits
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

    def validate(self) -> None:
        if self.d_model is None:
            self.normalise("d_model", self.d_head)
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


def _generators(seed: int, device: str) -> list[torch.Generator]:
    """Independent generators for init (CPU), training data and held-out data."""
    states = np.random.SeedSequence(seed).spawn(3)
    devices = ("cpu", device, device)
    return [torch.Generator(device=d).manual_seed(int(s.generate_state(1)[0])) for s, d in zip(states, devices)]


def train_pair(cfg: ScalingConfig, run_dir=None) -> dict[str, dict]:
    """Train the scaled and the unscaled model (same init, same batches) with Adam.

    Returns per model {"step": [...], "loss": [...], "accuracy": [...], "entropy": [...],
    "grad_norm": [...]}: the held-out :func:`measure` at step 0, every ``eval_every``
    steps and at the last step, each also streamed to ``run_dir``'s metrics.jsonl.
    """
    g_init, g_data, g_eval = _generators(cfg.seed, cfg.device)
    first = CopyAttention(V=cfg.V, n=cfg.n, d_model=cfg.d_model, d_head=cfg.d_head, scale=VARIANTS["scaled"],
                          logit_init_scale=cfg.logit_init_scale, generator=g_init).to(cfg.device)
    models = {"scaled": first, "unscaled": copy.deepcopy(first)}
    models["unscaled"].scale = VARIANTS["unscaled"]
    opts = {k: torch.optim.Adam(m.parameters(), lr=cfg.lr) for k, m in models.items()}
    held_out = copy_batch(cfg.eval_batch, cfg.n, cfg.V, generator=g_eval)
    history: dict[str, dict] = {k: {"step": []} for k in models}

    def evaluate(step: int) -> None:
        for k, m in models.items():
            rec = measure(m, held_out)
            history[k]["step"].append(step)
            for name, v in rec.items():
                history[k].setdefault(name, []).append(v)
            log_metric(run_dir, {"experiment": EXPERIMENT_ID, "d_head": cfg.d_head, "seed": cfg.seed,
                                 "variant": k, "step": step, **rec})

    evaluate(0)
    step = 0
    while step < cfg.steps and not (cfg.stop_at_threshold and _both_reached(history, cfg.loss_threshold)):
        step += 1
        b = copy_batch(cfg.batch, cfg.n, cfg.V, generator=g_data)  # shared by both models
        for k, m in models.items():
            loss = F.cross_entropy(m(b), b.targets)
            opts[k].zero_grad(set_to_none=True)
            loss.backward()
            opts[k].step()
        if step % cfg.eval_every == 0 or step == cfg.steps:
            evaluate(step)
    return history


def _both_reached(history: dict[str, dict], threshold: float) -> bool:
    return all(min(h["loss"]) <= threshold for h in history.values())


def scalars_of(cfg: ScalingConfig, history: dict[str, dict]) -> dict[str, float | int | bool]:
    """Per-variant scalars for the sweep table (module docstring for steps_to_threshold)."""
    out: dict[str, float | int | bool] = {}
    for k, h in history.items():
        hit = [s for s, loss in zip(h["step"], h["loss"]) if loss <= cfg.loss_threshold]
        out.update({f"{k}_steps_to_threshold": hit[0] if hit else cfg.steps + 1,
                    f"{k}_reached_threshold": bool(hit),
                    f"{k}_final_loss": h["loss"][-1], f"{k}_final_accuracy": h["accuracy"][-1],
                    f"{k}_initial_loss": h["loss"][0],
                    f"{k}_initial_entropy": h["entropy"][0], f"{k}_final_entropy": h["entropy"][-1],
                    f"{k}_initial_grad_norm": h["grad_norm"][0], f"{k}_final_grad_norm": h["grad_norm"][-1]})
    out["max_entropy"] = math.log(cfg.n)  # uniform attention over n keys
    return out


def run_scaling(cfg: ScalingConfig, run_dir=None) -> ExperimentResult:
    """One sweep run: one d_head, one seed, both models; its scalars are one row of the sweep."""
    history = train_pair(cfg, run_dir)
    sc = scalars_of(cfg, history)
    colors = {"scaled": PALETTE[0], "unscaled": PALETTE[1]}
    label = {"scaled": "c = 1/sqrt(d_head)", "unscaled": "c = 1"}
    fig = line_figure(
        "scaling-training-curves.png",
        f"Held-out loss during training at d_head={cfg.d_head}, seed {cfg.seed}: the same init and "
        f"batches, with and without 1/sqrt(d_head); dashed: loss threshold {cfg.loss_threshold:g}.",
        series=[series(label[k], h["step"], h["loss"], color=colors[k], marker=False) for k, h in history.items()]
        + [series("threshold", [0, cfg.steps], [cfg.loss_threshold] * 2, style="dashed", marker=False,
                  color="#777777")],
        xlabel="step", ylabel="held-out cross-entropy", yscale="log", title="Training with and without 1/sqrt(d)")
    summary = [info(f"{k}: steps to loss <= {cfg.loss_threshold:g}",
                    sc[f"{k}_steps_to_threshold"] if sc[f"{k}_reached_threshold"]
                    else Bound.at_least(cfg.steps + 1, f"not reached within the {cfg.steps}-step budget"),
                    where="§1.2.3", detail=f"final loss {sc[f'{k}_final_loss']:.3g}") for k in history]
    return ExperimentResult(summary=summary, figures=[fig], data={"history": history}, scalars=sc)


def reproduce_plan(scale: str) -> SweepPlan:
    """The d_head x seeds sweep ``attnlab reproduce`` runs at ``scale``."""
    return SWEEPS[check_choice("scale", scale, tuple(SWEEPS))]


# --------------------------------------------------------------------------------------
# The sweep's rows -> the report (no maths: means, ranges and ratios of stored numbers)
# --------------------------------------------------------------------------------------
def _by_d_head(rows: list[dict]) -> dict[int, list[dict]]:
    groups: dict[int, list[dict]] = {}
    for r in rows:
        if r.get("status") == "ok":
            groups.setdefault(int(r["d_head"]), []).append(r)
    return dict(sorted(groups.items()))


def _stat(runs: list[dict], key: str) -> dict[str, float]:
    x = np.array([float(r[key]) for r in runs])
    return {"mean": float(x.mean()), "min": float(x.min()), "max": float(x.max())}


def aggregate(rows: list[dict]) -> ExperimentResult:
    """Summary rows, a per-d_head table and three figures from the sweep's table rows."""
    groups = _by_d_head(rows)
    if not groups:
        raise ConfigError("the scaling sweep has no finished run to aggregate; rerun with --resume")
    dims = list(groups)
    stats = {k: {name: [_stat(groups[d], f"{k}_{name}") for d in dims]
                 for name in ("steps_to_threshold", "initial_grad_norm", "initial_entropy", "final_loss")}
             for k in VARIANTS}
    reached = {k: [sum(bool(r[f"{k}_reached_threshold"]) for r in groups[d]) for d in dims] for k in VARIANTS}
    first = groups[dims[0]][0]
    steps, thr, n = int(first["steps"]), float(first["loss_threshold"]), int(first["n"])
    table_rows = []
    for i, d in enumerate(dims):
        K = len(groups[d])
        cell = {k: f"{stats[k]['steps_to_threshold'][i]['mean']:.0f} ({stats[k]['steps_to_threshold'][i]['min']:.0f}"
                   f"-{stats[k]['steps_to_threshold'][i]['max']:.0f})" for k in VARIANTS}
        table_rows.append([d, K, cell["scaled"], cell["unscaled"], f"{reached['scaled'][i]}/{K}",
                           f"{reached['unscaled'][i]}/{K}"]
                          + [stats[k]["initial_grad_norm"][i]["mean"] for k in VARIANTS]
                          + [stats[k]["initial_entropy"][i]["mean"] for k in VARIANTS])
    table = Table(f"Steps to held-out loss <= {thr:g} (mean, min-max over seeds; {steps + 1} = not reached)",
                  ["d_head", "seeds", "scaled steps", "unscaled steps", "scaled reached", "unscaled reached",
                   "init ||dl/dz|| scaled", "unscaled", "init entropy scaled", "unscaled"], table_rows,
                  ["int", "int", "text", "text", "text", "text", "float", "float", "float", "float"])
    mean = {k: {name: [s["mean"] for s in v] for name, v in stats[k].items()} for k in VARIANTS}
    return ExperimentResult(
        summary=_summary(dims, mean, reached, groups, steps, thr), tables=[table],
        figures=_figures(dims, stats, steps, thr, n),
        notes=[f"One run trains two models from the same init on the same batches (Adam, {steps} steps), "
               "one with c = 1/sqrt(d_head), one with c = 1; d_model is tied to d_head unless set.",
               f"steps to threshold: first evaluated step with held-out loss <= {thr:g}; "
               f"{steps + 1} when never reached, so means over seeds are lower bounds.",
               "||dl/dz||: mean over held-out examples of the norm of the gradient of the example's "
               "loss with respect to its attention logits z (the softmax input)."],
        data={"d_head": dims, "stats": stats, "reached": reached,
              "seeds": {d: len(g) for d, g in groups.items()}})


WHERE = "§1.2.3 (\"it leads to more stable gradients\")"


def _summary(dims: Sequence[int], mean: Any, reached: Any, groups: Any, steps: Any, thr: float) -> list[Check]:
    """The text's three effects at the largest d_head, as ratios unscaled / scaled of the means
    over seeds, and whether every scaled run learned within the budget (attnlab's task and
    training must be learnable: a construction).

    A run that never reaches the threshold counts steps + 1, a lower bound; a mean over such runs
    is one too. With every scaled run exact, unscaled / scaled is then a lower bound (it decides
    "> 1" when the bound does); with a censored scaled run the ratio is not measured."""
    i, d = len(dims) - 1, dims[-1]
    K = len(groups[d])
    ent = mean["unscaled"]["initial_entropy"][i] / mean["scaled"]["initial_entropy"][i]
    grad = mean["unscaled"]["initial_grad_norm"][i] / mean["scaled"]["initial_grad_norm"][i]
    slow = mean["unscaled"]["steps_to_threshold"][i] / mean["scaled"]["steps_to_threshold"][i]
    cannot = ""
    if reached["scaled"][i] < K:
        cannot = f"the scaled model missed the threshold in {K - reached['scaled'][i]}/{K} seeds (censored)"
    elif reached["unscaled"][i] < K:
        slow = Bound.at_least(slow, f"the unscaled model missed the threshold in {K - reached['unscaled'][i]}/{K} "
                                    f"seeds, counted as {steps + 1} steps")
    runs = sum(len(g) for g in groups.values())
    return [
        below(ent, 1, quantity=f"initial attention entropy at d_head={d}: unscaled / scaled", where=WHERE,
              paper_value="softmax saturates without 1/sqrt(k)", detail=f"mean over {K} seeds"),
        below(grad, 1, quantity=f"initial ||dl/dz|| at d_head={d}: unscaled / scaled", where=WHERE,
              paper_value="gradient vanishes without 1/sqrt(k)", detail=f"mean over {K} seeds"),
        above(slow, 1, quantity=f"mean steps to loss <= {thr:g} at d_head={d}: unscaled / scaled", where=WHERE,
              paper_value="more stable gradients with 1/sqrt(k)", cannot_decide=cannot,
              detail=f"unscaled reached the threshold in {reached['unscaled'][i]}/{K} seeds, scaled in "
                     f"{reached['scaled'][i]}/{K}"),
        compare(f"scaled runs reaching loss <= {thr:g} within {steps} steps", sum(reached["scaled"]), "==", runs,
                role="construction", where="§1.2.3", detail=f"d_head = {', '.join(map(str, dims))}"),
    ]


def _figures(dims: Sequence[int], stats: Any, steps: Any, thr: float, n: int) -> list[LineFigure]:
    color = {"scaled": PALETTE[0], "unscaled": PALETTE[1]}
    label = {"scaled": "c = 1/sqrt(d_head)", "unscaled": "c = 1"}

    def lines(name: str, spread: bool) -> list[Series]:
        out = []
        for k in VARIANTS:
            s = stats[k][name]
            out.append(series(f"{label[k]} (mean)", dims, [x["mean"] for x in s], color=color[k]))
            if spread:
                out += [series(f"{label[k]} ({m} over seeds)", dims, [x[m] for x in s], style="dotted",
                               marker=False, color=color[k]) for m in ("min", "max")]
        return out

    budget = series(f"not reached ({steps + 1})", dims, [steps + 1] * len(dims), style="dashed", marker=False,
                    color="#777777")
    uniform = series(f"log n = {math.log(n):.3f} (uniform)", dims, [math.log(n)] * len(dims), style="dashed",
                     marker=False, color="#777777")
    return [
        line_figure("scaling-steps-to-threshold.png",
                    f"Training steps until the held-out loss is <= {thr:g}, against d_head, with and without "
                    "1/sqrt(d_head): mean over seeds (solid) and the range (dotted).",
                    series=lines("steps_to_threshold", True) + [budget], xlabel="d_head", ylabel="steps",
                    xscale="log", yscale="log", title="Steps to learn positional copy"),
        line_figure("scaling-initial-gradient.png",
                    "Mean norm of the gradient of an example's loss with respect to its attention logits "
                    "(through the softmax) at initialisation, against d_head.",
                    series=lines("initial_grad_norm", False), xlabel="d_head",
                    ylabel=r"mean $\|\partial l/\partial z\|$", xscale="log", yscale="log",
                    title="Gradient through softmax at init"),
        line_figure("scaling-initial-entropy.png",
                    "Mean entropy of the attention weights at initialisation, against d_head; "
                    "0 is one-hot (saturated).",
                    series=lines("initial_entropy", False) + [uniform], xlabel="d_head", ylabel="entropy (nats)",
                    xscale="log", title="Attention entropy at init"),
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "§1.2.3 by training: steps to learn positional copy with and without 1/sqrt(d_head)",
                    ScalingConfig, run_scaling, reproduce_sweep=reproduce_plan, aggregate=aggregate))
