"""memorization.saturation: Figure 3 (Appendix H) of the memorization paper, softmax saturation.

memorization-capacity-of-mha Appendix H. Setting (§5.2): d = 64, n = 32, d_h = d, one
context E shared by all T examples, tokens and queries iid U(0, 1)^d, labels uniform on
100 classes; H = 4 and H = 8. A model is trained (full-batch Adam,
:func:`attnlab.papers.memorization.capacity_search.train_candidates`) until it memorizes all T labels; then,
for every example t and head h, the softmax coefficients theta_h^(t) = Softmax(alpha_h^(t))
of eq. (2) are measured. Head h is *saturated* for example t if max_i theta_h,i^(t) > 0.99.

Reported per H (Fig. 3 (a)-(c) for H = 8, (d)-(f) for H = 4):
  (a) which heads are saturated, for the first 20 examples;
  (b) histogram of the number of saturated heads per example (T entries; the paper's
      caption says "H x T in total", which only holds for (c));
  (c) histogram of max_i theta_h,i^(t) over all H x T (head, example) pairs;
and the fraction of saturated (head, example) pairs and of examples with at least one
unsaturated head, beside the paper's reading: "a significant number of heads are
saturated for the majority of examples, while almost all examples have at least one
corresponding non-saturated head".

Both models are measured (``models``): the authors' model as released ("released":
linear embedding + sinusoidal positions + attention with d_v = 1 per head and the
query's own key masked, :data:`attnlab.papers.memorization.authors_model.AUTHORS_RELEASED`),
the model of App. H, and attnlab's eqs. (1)-(6) on the raw tokens with d_v = d_h
("plain"). Only the released model is compared with the text; the plain model's rows
say they are another model.

T: quick scale trains the plain model at the paper's T (550 at H = 4, 1300 at H = 8),
which full-batch Adam memorizes in 100-200 steps, and the released model at T = 250
(H = 4) and 550 (H = 8), which it memorizes in 300-400 steps (it does not reach 550 at
H = 4 within a few thousand full-batch steps: memorization.authors-capacity); both go
on to 500 steps (min_steps) before measuring. Paper scale (T = 0) first searches the
largest T memorized within the step budget (capacity_search.search_capacity), then
trains that T for the whole budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnlab.checks import NO_ERROR, Check, above, at_least, info
from attnlab.config import RunConfig, check_int, check_ints, check_number, param
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, total
from attnlab.papers.memorization.authors_model import AUTHORS_RELEASED
from attnlab.papers.memorization.capacity_search import SearchConfig, search_estimate
from attnlab.papers.memorization.saturation import (
    GRID_EXAMPLES,
    THRESHOLD,
    SaturationMeasurement,
    max_theta_edges,
    measure_saturation,
)
from attnlab.registry import Experiment, register_experiment
from attnlab.results import PALETTE, BarFigure, ExperimentResult, LineFigure, Table, bar_figure, line_figure, series
from attnlab.runs.rundir import log_metric

EXPERIMENT_ID = "memorization.saturation"
PAPER_T = {4: 550, 8: 1300}  # App. H: largest T memorized, 300k Adam steps
PAPER_STEPS = 300_000  # App. H: "We train both models for 300,000 optimization steps"
MAJORITY = 0.5  # Fig. 3's caption: "the majority of heads become saturated"
ALMOST_ALL = 0.9  # App. H: "almost all examples have at least one non-saturated head" (0.9: our reading)
MAJORITY_ANCHOR = "memorization.fig3-majority-saturated"  # Fig. 3: "the majority of heads become saturated"
UNSATURATED_ANCHOR = "memorization.apph-unsaturated-head"  # App. H: "almost all examples have ... non-saturated head"
MODELS = ("released", "plain")
MODEL_TEXT = {
    "released": "the authors' model as released (embedding + sinusoidal PE + attention, d_v=1, query's key masked)",
    "plain": "eqs. (1)-(6) on the raw tokens, d_v=d_h (not the authors' model)",
}


@dataclass(frozen=True)
class SaturationConfig(RunConfig):
    """Full-batch Adam with linear warmup + cosine decay over max_steps; a model stops at the
    first step >= min_steps at which it memorizes (the paper trains a fixed 300k steps;
    saturation grows with training after memorization)."""

    PRESETS = {
        "quick": {"Ts": (550, 1300), "released_Ts": (250, 550), "max_steps": 3000, "min_steps": 500},
        "paper": {"Ts": (0, 0), "released_Ts": (0, 0), "max_steps": 20_000, "min_steps": 20_000},
    }

    H_grid: tuple[int, ...] = param((4, 8), "numbers of heads H")
    Ts: tuple[int, ...] | None = param(None, "data-set size per H, plain model (0: search the largest T memorized)")
    released_Ts: tuple[int, ...] | None = param(None, "data-set size per H, the released authors' model (0: search)")
    models: tuple[str, ...] = param(MODELS, "released (the authors' model as released) and/or plain (eqs. (1)-(6))")
    d: int = param(64, "token dimension d")
    n: int = param(32, "context size n")
    d_h: int | None = param(None, "head size d_h (None: d)")
    n_classes: int = param(100, "label classes")
    max_steps: int | None = param(None, "Adam's update budget")
    min_steps: int | None = param(None, "updates before a memorizing model may stop")
    lr: float = param(1e-2, "Adam's peak learning rate")
    warmup: int = param(100, "linear warmup steps")
    threshold: float = param(THRESHOLD, "saturation level: max_i theta_h,i above it (App. H: 0.99)")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """d_h left None takes d; the grids tuples, checked here with models (a name alone: a tuple of one)."""
        v = super().normal_form(values)
        if v["d_h"] is None:
            v["d_h"] = v["d"]
        v["H_grid"] = check_ints("H_grid", v["H_grid"], minimum=1)
        for name in ("Ts", "released_Ts"):
            v[name] = check_ints(f"{name} (0 = search)", v[name], minimum=0)
        models = (v["models"],) if isinstance(v["models"], str) else tuple(v["models"])
        if not models or any(m not in MODELS for m in models) or len(set(models)) != len(models):
            raise ConfigError(f"models must be distinct names among {', '.join(MODELS)}, got {v['models']!r}")
        return {**v, "models": models}

    def validate(self) -> None:
        for name in ("Ts", "released_Ts"):
            Ts = getattr(self, name)
            if len(self.H_grid) != len(Ts):
                raise ConfigError(f"give one T per H: H_grid {list(self.H_grid)} has {len(self.H_grid)} entries, "
                                  f"{name} {list(Ts)} has {len(Ts)}")
        for name in ("d", "n", "d_h", "max_steps"):
            check_int(name, getattr(self, name), 1)
        check_int("min_steps", self.min_steps, 0)
        if self.min_steps > self.max_steps:
            raise ConfigError(f"min_steps ({self.min_steps}) must be at most max_steps ({self.max_steps})")
        check_int("n_classes", self.n_classes, 2)
        check_number("threshold", self.threshold, 0, 1, open_min=True, open_max=True)
        # the trainer's own checks (lr, warmup < max_steps) with this config's values
        self.search_config(self.H_grid[0])

    def estimate(self) -> Estimate:
        """Every H and model at its T, or a search (T = 0) up to the search's T_limit
        (:func:`search_estimate`): memory the largest, work the sum, each training at
        max(max_steps, min_steps) updates of one model (a search then trains its T once more
        for max_steps). A model stops at the first memorizing step >= min_steps, so the time
        is an upper bound."""
        parts = []
        for model in self.models:
            for H, T in zip(self.H_grid, self.T_for(model)):
                sc = self.search_config(H, model)
                parts.append(search_estimate(sc, T or None, min_steps=self.min_steps))
                if not T:  # the searched T trained again: at most T_limit
                    parts.append(search_estimate(sc, sc.T_limit, min_steps=self.min_steps))
        return total(parts)

    def search_config(self, H: int, model: str = "plain") -> SearchConfig:
        kind = ({"model": "authors", "d_v": AUTHORS_RELEASED["d_v"], "keys": AUTHORS_RELEASED["keys"]}
                if model == "released" else {"model": "plain"})
        return SearchConfig(H=H, d=self.d, n=self.n, d_h=self.d_h, n_classes=self.n_classes, seed=self.seed,
                            max_steps=self.max_steps, lr=self.lr, warmup=self.warmup, device=self.device, **kind)

    def T_for(self, model: str) -> tuple[int, ...]:
        return self.released_Ts if model == "released" else self.Ts


def run(cfg: SaturationConfig, run_dir=None) -> ExperimentResult:
    per_H = []
    for model in cfg.models:
        for H, T in zip(cfg.H_grid, cfg.T_for(model)):
            r = measure_saturation(cfg.search_config(H, model), T, model, min_steps=cfg.min_steps,
                                   threshold=cfg.threshold)
            per_H.append(r)
            log_metric(run_dir, {"experiment": EXPERIMENT_ID, "model": model, "H": H, "T": r.T,
                                 "memorized": r.memorized,
                                 "steps": r.steps, "fraction_saturated": r.final.fraction_saturated,
                                 "fraction_with_unsaturated": r.final.fraction_with_unsaturated})
    return ExperimentResult(
        summary=[row for r in per_H for row in _summary(cfg, r)], tables=[_grid_table(r) for r in per_H],
        figures=[f for r in per_H for f in _figures(cfg, r)], notes=_notes(cfg),
        data={"threshold": cfg.threshold, "max_theta_edges": list(max_theta_edges(cfg.threshold)),
              "per_H": [r.to_dict() for r in per_H]},
        deviations=deviations(cfg))


def deviations(cfg: SaturationConfig) -> list[Deviation]:
    """How the runs depart from App. H's: full-batch Adam at lr 1e-2 (App. H: Adam lr 1e-3, batch 256), fewer
    than 300,000 steps, the plain model, other sizes, a T other than App. H's (and not searched)."""
    out = [Deviation("full-batch-adam", "optimizer",
                     f"full-batch Adam, peak lr {cfg.lr:g}, {cfg.warmup} warmup steps then cosine decay over "
                     f"{cfg.max_steps:,} steps; App. A/H: Adam lr 1e-3, batch 256, warmup + cosine",
                     "full batch at a higher rate memorizes in hundreds of steps; the authors' protocol (300,000 "
                     "minibatch steps) takes hours per model on a CPU", control="")]
    if cfg.min_steps < PAPER_STEPS:
        out.append(Deviation("step-budget", "budget",
                             f"a model stops at its first memorizing step >= {cfg.min_steps:,} (at most "
                             f"{cfg.max_steps:,}); App. H trains {PAPER_STEPS:,} steps, and saturation grows with "
                             "training past memorization", "the text's budget takes GPU hours",
                             control=f"--set min_steps={PAPER_STEPS} --set max_steps={PAPER_STEPS}"))
    if "plain" in cfg.models:
        out.append(Deviation("plain-model", "model", MODEL_TEXT["plain"],
                             "attnlab's model of the text's equations, beside the authors' released one",
                             control="--set models=released"))
    if (cfg.d, cfg.n, cfg.d_h, cfg.n_classes) != (64, 32, 64, 100) or any(H not in PAPER_T for H in cfg.H_grid):
        out.append(Deviation("size", "size", f"H={list(cfg.H_grid)}, d={cfg.d}, n={cfg.n}, d_h={cfg.d_h}, "
                                             f"{cfg.n_classes} classes; App. H: H=4 and 8, d=64, n=32, d_h=64, 100 "
                                             "classes", "a smaller problem", control=""))
    if any(T and T != PAPER_T.get(H) for m in cfg.models for H, T in zip(cfg.H_grid, cfg.T_for(m))):
        trained = "; ".join(f"the {m} model at T=" + ", ".join(f"{T} (H={H})" for H, T in zip(cfg.H_grid, cfg.T_for(m))
                                                               if T and T != PAPER_T.get(H))
                            for m in cfg.models if any(T and T != PAPER_T.get(H)
                                                       for H, T in zip(cfg.H_grid, cfg.T_for(m))))
        out.append(Deviation("another-t", "size",
                             f"{trained}; App. H measures at the largest T memorized, 550 (H=4) and 1300 (H=8)",
                             "full-batch Adam does not reach 550 at H=4 within a few thousand steps on the released "
                             "model (memorization.authors-capacity)", control="--set released_Ts=0;0 (search)"))
    return out


def _row_deviations(cfg: SaturationConfig, r: "SaturationMeasurement") -> tuple[str, ...]:
    """The deviations of :func:`deviations` that touch the rows of measurement ``r``."""
    ids = ["full-batch-adam"]
    if r.steps < PAPER_STEPS:
        ids.append("step-budget")
    if r.model == "plain":
        ids.append("plain-model")
    if r.H not in PAPER_T or (cfg.d, cfg.n, cfg.d_h, cfg.n_classes) != (64, 32, 64, 100):
        ids.append("size")
    if not r.searched and r.T != PAPER_T.get(r.H):
        ids.append("another-t")
    return tuple(ids)


# --------------------------------------------------------------------------------------
# report pieces
# --------------------------------------------------------------------------------------
def _summary(cfg: SaturationConfig, r: SaturationMeasurement) -> list[Check]:
    """Memorized (info), then the two readings of Fig. 3 as text checks: the majority of (head,
    example) pairs saturated, and almost all examples with an unsaturated head. Each names the
    deviations from App. H's run that touch it (:func:`deviations`: the optimizer, fewer than 300k
    steps, the plain model, another size or T), which leave it inconclusive without a control; a model
    that did not memorize all T cannot decide."""
    H, T, model = r.H, r.T, r.model
    where = f"{model} model, H={H}, T={T}"
    devs = _row_deviations(cfg, r)
    cannot = ""
    if not r.memorized:
        cannot = (f"the model did not memorize all T={T} labels within {cfg.max_steps} steps "
                  f"(accuracy {r.accuracy:.3f})")
    fig = "App. H, Fig. 3 " + ("(a)-(c)" if H == 8 else "(d)-(f)" if H == 4 else "")
    at_mem = r.at_memorization
    return [
        info(f"all T={T} labels memorized, {where} (d={cfg.d}, n={cfg.n}, d_h={cfg.d_h})", r.memorized,
             paper_value=f"T={PAPER_T[H]} after 300k steps" if H in PAPER_T else None, where="App. H",
             detail=f"{MODEL_TEXT[model]}; first memorized at step {r.memorized_at}, measured at step "
                    f"{r.steps} (final loss {r.final_loss:.3g}); Theorem 1 bound {r.bound}"),
        above(r.final.fraction_saturated, MAJORITY,
              f"{int(r.final.saturated.sum())} of {r.final.saturated.size} pairs, max theta > {cfg.threshold}; at the "
              f"first memorizing step {at_mem.fraction_saturated:.3f}; {MODEL_TEXT[model]}",
              {"at_memorization": at_mem.fraction_saturated, "steps": r.steps},
              quantity=f"fraction of saturated (head, example) pairs, {where}",
              paper_value="the majority of heads saturated", where=fig.strip(), cannot_decide=cannot,
              deviations=devs, anchor=MAJORITY_ANCHOR, erratum=NO_ERROR,
              falsifier=f"at most half of the H x T (head, example) pairs have max theta > {cfg.threshold}"),
        at_least(r.final.fraction_with_unsaturated, ALMOST_ALL,
                 f"examples with all {H} heads saturated: {int(r.final.heads_histogram[H])} of {T}; at the first "
                 f"memorizing step {at_mem.fraction_with_unsaturated:.3f}; 'almost all' read as >= "
                 f"{ALMOST_ALL:g}",
                 {"at_memorization": at_mem.fraction_with_unsaturated},
                 quantity=f"fraction of examples with at least one unsaturated head, {where}",
                 paper_value="almost all", where=fig.strip(), cannot_decide=cannot,
                 deviations=devs, anchor=UNSATURATED_ANCHOR, erratum=NO_ERROR,
                 falsifier=f"more than {1 - ALMOST_ALL:.0%} of the examples have every head saturated"),
    ]


def _grid_table(r: SaturationMeasurement) -> Table:
    H = r.H
    rows = [[t + 1, *("S" if s else "." for s in r.final.saturated[t]), int(r.final.saturated[t].sum())]
            for t in range(min(GRID_EXAMPLES, r.T))]
    return Table(f"Saturated heads (S: max theta > 0.99) for the first {len(rows)} examples, {r.model} model, "
                 f"H={H}, T={r.T} "
                 f"(Fig. 3 {'(a)' if H == 8 else '(d)'})",
                 ["example", *(f"head {h + 1}" for h in range(H)), "saturated"], rows,
                 ["int", *("text",) * H, "int"])


def _figures(cfg: SaturationConfig, r: SaturationMeasurement) -> list[LineFigure | BarFigure]:
    H, T = r.H, r.T
    grid = r.final.saturated[:GRID_EXAMPLES]
    points = {True: ([], []), False: ([], [])}
    for t in range(grid.shape[0]):
        for h in range(H):
            xs, ys = points[bool(grid[t, h])]
            xs += [t + 1, t + 1]
            ys += [h + 1, None]  # None breaks the line: one marker per (example, head)
    tag = f"{r.model} model, H={H}, T={T}"
    name = f"{r.model}-H{H}"
    edges = max_theta_edges(cfg.threshold)
    bins = [f"{lo:.2f}" for lo in edges[:-2]] + [f">{cfg.threshold}"]  # lower edges, then the saturated bin
    return [
        line_figure(f"saturation-grid-{name}.png",
                    f"Saturated heads for the first {grid.shape[0]} examples ({tag}): a head is saturated "
                    f"for an example if its largest softmax coefficient exceeds {cfg.threshold} (Fig. 3 (a)/(d)).",
                    series=[series("saturated", *points[True], color=PALETTE[1]),
                            series("not saturated", *points[False], color=PALETTE[0])],
                    xlabel="example t", ylabel="head h", title=f"Saturated heads, {tag}"),
        bar_figure(f"saturation-heads-per-example-{name}.png",
                   f"Number of saturated heads per example, over the T={T} examples ({tag}; Fig. 3 (b)/(e)).",
                   categories=[str(k) for k in range(H + 1)],
                   groups=[{"label": "examples", "values": r.final.heads_histogram.tolist()}],
                   ylabel="examples", title=f"Saturated heads per example, {tag}"),
        bar_figure(f"saturation-max-theta-{name}.png",
                   f"Largest softmax coefficient max_i theta_h,i over all H x T = {H * T} (head, example) pairs "
                   f"({tag}; Fig. 3 (c)/(f)); bins 0.05 wide labelled by their lower edge, the last one "
                   f"({cfg.threshold}, 1] (saturated).",
                   categories=bins, groups=[{"label": "(head, example) pairs",
                                             "values": r.final.max_theta_histogram.tolist()}],
                   ylabel="pairs", title=f"Max softmax coefficient, {tag}"),
    ]


def _notes(cfg: SaturationConfig) -> list[str]:
    return [
        ("The paper trains 300k Adam steps (lr 1e-3, batch 256); here full-batch Adam, peak lr "
         f"{cfg.lr:g} with {cfg.warmup} warmup steps and cosine decay over {cfg.max_steps} steps, stopped at the "
         f"first step >= {cfg.min_steps} with 100% training accuracy. Saturation is also reported at the first "
         "memorizing step: training on after memorization lowers the loss by growing the logits, which "
         "saturates more heads, so the fraction depends on how long one trains past memorization."),
        ("Models: 'released' is the authors' model as released (linear embedding with bias, sinusoidal "
         "positions pos_0 for the query and pos_1..pos_n for the context, one attention layer with d_v = 1 per "
         "head, the query's own key masked, logits / sqrt(d), read at the query token); theta is its softmax "
         "over the n context tokens. 'plain' is eqs. (1)-(6) on the raw U(0,1) inputs with d_v = d_h, attnlab's "
         "model of the text's equations: its rows are shown beside the released model's and cannot decide "
         "the text's statements. theta is computed in float64 from the trained float32 weights."),
        ("The paper reads Fig. 3 as 'the majority of heads become saturated' and 'almost all examples have at "
         f"least one non-saturated head': judged as > {MAJORITY:g} of the (head, example) pairs and >= "
         f"{ALMOST_ALL:g} of the examples (the second threshold is our reading of 'almost all')."),
        ("Fig. 3 caption: (b) and (e) histogram one number per example (T in total), not H x T as the caption "
         "says; only (c) and (f), one value per (head, example) pair, have H x T entries."),
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "Fig. 3 (App. H): softmax saturation of the heads of models that memorize, H = 4 and 8",
                    SaturationConfig, run, anchors=(MAJORITY_ANCHOR, UNSATURATED_ANCHOR)))
