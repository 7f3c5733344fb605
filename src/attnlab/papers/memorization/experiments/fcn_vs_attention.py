"""memorization.fcn-vs-attention: Proposition 3 beside Theorem 1, both models trained to their limit.

memorization-capacity-of-mha §4.3 and Appendix F. Data: the proof's eq. (29) data set
(contexts = the first n standard basis rows of R^d, shared; queries e^(t) = [0_{d-n}; x^(t)],
x^(t) ~ N(0, I_n); regression labels y^(t) ~ N(0, 1), d_out = 1), which satisfies Assumptions
1 and 2. For every T of the grid, on the same data:

- the attention layer of eqs. (1)-(6) (H heads, d_h, d_v = 1) and
- the two-layer ReLU network f_{(n+1)d, m, 1} on the flattened inputs, with m the largest
  width whose parameter count does not exceed the attention layer's (matched_hidden_width)

are each trained to their limit: full batch, float64, L-BFGS from several restarts
(attnlab.papers.memorization.fcn.train_attention / train_fcn), and the smallest relative
residual ||y_hat - y|| / ||y|| is reported. Proposition 3 bounds the FCN: it cannot memorize
more than (n+1) m + m + 1 examples; Theorem 1 guarantees the attention layer H (r - 1) + 1.

Which fits memorize. A fit memorizes T examples when its residual lies below the level in the
widest gap of the run's residuals (both models, best of the restarts, every T;
:func:`attnlab.papers.memorization.residual_gap.gap_threshold`): memorizing fits end at the
solver's floor, failed ones orders of magnitude above it. A fixed level (1e-8 before) cut through
the floor's spread at the text's size: the attention layer's 1.7e-8 / 9.2e-9 / 1.2e-8 at
T = 511 / 640 / 768 made "T* = 640" an artefact of the level, and the FCN's 1.3e-8 at T = 250 and
8.5e-7 at T = 375 hid that its fits break between 375 and 511 (residual 0.127), next to the bound
496 with ReLU's scaling symmetry removed. T* is the largest grid T memorized, reported with the
grid's next T and both residuals; at the top of the grid it is a lower bound.

What the rows are. Proposition 3 is an upper bound for every weight set, so memorizing weights
that training finds beyond it would refute it (ledger entry ``proposition-3``); training that
fails at some T within its budget does not show that no weights exist, so the FCN's T* is a
lower bound of what it memorizes (:class:`attnlab.checks.Bound`), and the row differs only
where that lower bound passes the proposition's bound (otherwise it is inconclusive). The
attention layer's "T* >= H (r - 1) + 1" is attnlab's own statement (gradient descent reaches
Theorem 1's bound; the theorem says such weights exist).
"""

from __future__ import annotations

from typing import Any, Callable

import dataclasses
from dataclasses import dataclass

import torch

from attnlab.config import RunConfig, check_int, check_ints, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.papers.memorization.fcn import (
    attention_parameter_count,
    draw_eq29_dataset,
    fcn_parameter_count,
    homogeneity_bound,
    matched_hidden_width,
    proposition3_bound,
    train_attention,
    train_fcn,
)
from attnlab.papers.memorization.capacity_cells import STEP_BUDGET, training_work
from attnlab.papers.memorization.capacity_report import GD_REACHES_BOUND
from attnlab.papers.memorization.model import theorem1_bound, training_bytes
from attnlab.papers.memorization.residual_gap import MIN_DECADES, GapThreshold, gap_threshold
from attnlab.stored import Stored
from attnlab.training.lbfgs import max_evaluations
from attnlab.registry import Experiment, register_experiment
from attnlab.checks import Bound, Check, at_least, at_most, info
from attnlab.results import PALETTE, ExperimentResult, LineFigure, Table, line_figure, series
from attnlab.runs.rundir import log_metric

EXPERIMENT_ID = "memorization.fcn-vs-attention"
PROPOSITION3 = "memorization.proposition-3"  # the FCN's row checks Proposition 3's upper bound
PLOT_FLOOR = 1e-16  # residuals are drawn at least here on the log axis


@dataclass(frozen=True)
class FCNvsAttentionConfig(RunConfig):
    """The attention layer has d_v = d_out = 1; the FCN's width m is matched to its parameter
    count (:func:`attnlab.papers.memorization.fcn.matched_hidden_width`)."""

    PRESETS = {
        "quick": {"H": 4, "d": 6, "n": 3, "d_h": 3, "T_grid": (5, 9, 14, 20, 29, 36, 45), "restarts": 3,
                  "steps": 3},
        "paper": {"H": 4, "d": 64, "n": 32, "d_h": 64, "T_grid": (64, 125, 250, 375, 511, 640, 768),
                  "restarts": 3, "steps": 40},
    }

    H: int | None = param(None, "number of heads H of the attention layer")
    d: int | None = param(None, "token dimension d")
    n: int | None = param(None, "context size n < d")
    d_h: int | None = param(None, "head size d_h")
    T_grid: tuple[int, ...] | None = param(None, "data-set sizes T")
    restarts: int | None = param(None, "random inits per model and T")
    steps: int | None = param(None, "L-BFGS calls of 50 iterations each")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        v = super().normal_form(values)
        v["T_grid"] = tuple(sorted(set(check_ints("T_grid", v["T_grid"], minimum=2))))
        return v

    def validate(self) -> None:
        for name in ("H", "d", "n", "d_h", "restarts", "steps"):
            check_int(name, getattr(self, name), 1)
        if not self.n < self.d:
            raise ConfigError(f"the paper needs n < d (eq. (29) pads queries with d - n zeros): got n = {self.n}, "
                              f"d = {self.d}")
        matched_hidden_width(self.H, self.d, self.n, self.d_h, 1, 1)  # raises if no FCN fits

    @property
    def m(self) -> int:
        return matched_hidden_width(self.H, self.d, self.n, self.d_h, 1, 1)

    def estimate(self) -> Estimate:
        """The largest T of the grid, float64, full batch: the attention layer
        (:func:`training_bytes` with L-BFGS's history) or the FCN on the flattened inputs
        (T x (n + 1) d, its T x m hidden layer forward and backward, 100 L-BFGS pairs)."""
        T, d_1 = max(self.T_grid), (self.n + 1) * self.d
        attention = training_bytes(1, T, self.H, self.n, self.d, self.d_h, 1, shared_context=True, lbfgs=True,
                                   itemsize=8)
        fcn = 8 * (T * d_1 * 2 + 3 * T * self.m + 104 * (d_1 + 2) * self.m)
        return Estimate(max(attention, fcn), f"training at T = {T} (x: {T} x {d_1}, float64)",
                        **self.work(), change="lower T_grid", time_bound=STEP_BUDGET)

    def work(self) -> dict[str, float]:
        """Every T of the grid, both models, ``restarts`` at once, full-batch L-BFGS of ``steps``
        calls of up to 50 iterations with 50 pairs (:func:`training_work`, float64): the attention
        layer (d_v = d_out = 1) and the FCN each as M = restarts models trained one after another;
        the FCN's products are 3 M S T 2 d_1 m with S = LBFGS_EVALS evaluations per call, d_1 = (n + 1) d.
        Summed over T_grid; an upper bound, since L-BFGS stops early once it has converged. A call
        evaluates the loss up to LBFGS_EVALS = 75 times (:func:`attnlab.training.lbfgs.max_evaluations`
        at 50 iterations: the line search's extra evaluations), not 50: counting 50 put the bound 15% under
        the measured time of the paper-scale run (13 min printed, 15.0 min taken)."""
        its = dict(lbfgs_iterations=LBFGS_EVALS, lbfgs_history=50, optimizer="lbfgs", itemsize=8)
        d_1, out = (self.n + 1) * self.d, {}
        for T in self.T_grid:
            att = training_work(self.restarts, T, self.H, self.n, self.d, self.d_h, 1, d_v=1, steps=self.steps,
                                evals=1, **its)
            fcn = training_work(self.restarts, T, 1, 1, d_1, self.m, 1, steps=self.steps, evals=1, **its)
            fcn["gemm"] = 3.0 * self.restarts * self.steps * LBFGS_EVALS * T * 2 * d_1 * self.m
            out = {k: out.get(k, 0.0) + att[k] + fcn[k] for k in att}
        return out


LBFGS_EVALS = max_evaluations(50)  # evaluations per L-BFGS call at most (75)


@dataclass(frozen=True)
class FitCell(Stored):
    """Both models trained on one eq. (29) data set of size T; residuals are relative,
    ||y_hat - y|| / ||y||."""

    T: int  # examples in the data set
    fcn_residual: float  # best residual of the ReLU FCN f_{(n+1)d, m, 1} over the restarts
    attention_residual: float  # best residual of the attention layer of eqs. (1)-(6) over the restarts
    fcn_residuals: list[float]  # (restarts,): the FCN's residual per restart
    attention_residuals: list[float]  # (restarts,): the attention layer's residual per restart


def train_cell(cfg: FCNvsAttentionConfig, T: int) -> FitCell:
    """Both models on one eq. (29) data set of size T: best relative residuals over restarts."""
    E, e, x_FCN, y = draw_eq29_dataset(T, cfg.n, cfg.d, 1, cfg.seed)
    t = dict(E=torch.from_numpy(E), e=torch.from_numpy(e), x=torch.from_numpy(x_FCN), y=torch.from_numpy(y))
    kw = dict(restarts=cfg.restarts, steps=cfg.steps, seed=cfg.seed + T)
    fcn = train_fcn(t["x"], t["y"], cfg.m, **kw)
    att = train_attention(t["E"], t["e"], t["y"], H=cfg.H, d_h=cfg.d_h, d_v=1, **kw)
    return FitCell(T=T, fcn_residual=fcn["residual"], attention_residual=att["residual"],
                   fcn_residuals=fcn["residuals"], attention_residuals=att["residuals"])


def memorization_level(cells: list[FitCell]) -> GapThreshold:
    """The run's memorization level: the widest gap of every best residual, both models
    (:func:`attnlab.papers.memorization.residual_gap.gap_threshold`)."""
    return gap_threshold([c.fcn_residual for c in cells] + [c.attention_residual for c in cells])


@dataclass(frozen=True)
class LargestT:
    """T* of one model on the grid, with its neighbours: the largest T memorized (0: none) and its
    residual, the grid's next T above it and that T's residual (None at the top of the grid)."""

    T: int
    residual: float | None
    next_T: int | None
    next_residual: float | None

    def text(self) -> str:
        at = f"T* = {self.T} (residual {self.residual:.2g})" if self.T else "no T memorized"
        return at + (f"; next grid T = {self.next_T}: residual {self.next_residual:.2g}" if self.next_T
                     else "; the top of the grid")


def largest(cells: list[FitCell], residual: Callable[[FitCell], float], level: GapThreshold) -> LargestT:
    """T*: the largest T of the cells whose ``residual`` is at most the level, with the next T of the grid."""
    cells = sorted(cells, key=lambda c: c.T)
    done = [c for c in cells if level.memorized(residual(c))]
    best = done[-1] if done else None
    above = [c for c in cells if c.T > (best.T if best else 0)]
    return LargestT(best.T if best else 0, residual(best) if best else None,
                    above[0].T if above else None, residual(above[0]) if above else None)


def run(cfg: FCNvsAttentionConfig, run_dir=None) -> ExperimentResult:
    cells = []
    for T in cfg.T_grid:
        cells.append(train_cell(cfg, T))
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, **cells[-1].to_dict()})
    m = cfg.m
    sizes = {"m": m, "P_attention": attention_parameter_count(cfg.H, cfg.d, cfg.d_h, 1, 1),
             "P_fcn": fcn_parameter_count((cfg.n + 1) * cfg.d, m, 1),
             "proposition3_bound": proposition3_bound(cfg.n, m, 1), "homogeneity_bound": homogeneity_bound(cfg.n, m, 1),
             "theorem1_bound": theorem1_bound(cfg.H, cfg.n, cfg.d_h)}
    level = memorization_level(cells)
    best = {"fcn": largest(cells, lambda c: c.fcn_residual, level),
            "attention": largest(cells, lambda c: c.attention_residual, level)}
    return ExperimentResult(summary=_summary(cfg, sizes, best, level), tables=[_table(cells, sizes, level)],
                            figures=[_figure(cfg, cells, sizes, level)], notes=_notes(cfg, sizes),
                            data={"cells": [c.to_dict() for c in cells], **sizes,
                                  "largest_T_memorized": {k: v.T for k, v in best.items()},
                                  "neighbours": {k: dataclasses.asdict(v) for k, v in best.items()},
                                  "memorized_level": dataclasses.asdict(level)},
                            # Proposition 3 bounds every weight set of every size, and the comparison is
                            # attnlab's (the text trains no FCN): there is no protocol of the text to depart from
                            deviations=[])


def _attention_T(t: LargestT) -> int | Bound:
    """The attention layer's T* as a measured value: a lower bound where the top of the grid was memorized."""
    return Bound.at_least(t.T, f"T={t.T} is the top of the grid and was memorized") if t.next_T is None else t.T


def _capacity_bound(t: LargestT) -> Bound:
    """What the network can memorize, from T* of a grid: at least T*. A failure above T* is a failure
    of training within its budget, not a proof that no weights memorize there."""
    why = (f"T={t.next_T} was not memorized within the training budget (residual {t.next_residual:.2g}), which "
           "does not show that no weights memorize it" if t.next_T else f"T={t.T} is the top of the grid and was "
                                                                          "memorized")
    return Bound.at_least(t.T, why)


def _summary(cfg: FCNvsAttentionConfig, sizes: dict, best: dict[str, LargestT], level: GapThreshold) -> list[Check]:
    p3, t1, p3h = sizes["proposition3_bound"], sizes["theorem1_bound"], sizes["homogeneity_bound"]
    grid = f"grid {list(cfg.T_grid)}; memorized: {level}"
    # residuals that do not fall into two groups cannot say which T were memorized
    apart = "" if level.separates else (f"the residuals do not separate into memorized and not: their widest gap is "
                                        f"{level.decades:.1f} decades, under {MIN_DECADES:g}")
    t1_in_grid = t1 in cfg.T_grid
    fcn, att = best["fcn"], best["attention"]
    return [
        at_most(_capacity_bound(fcn), p3, f"{fcn.text()}; {grid}",
                {"T_star": fcn.T, "residual": fcn.residual, "next_T": fcn.next_T,
                 "next_residual": fcn.next_residual, "bound": p3, "homogeneity_bound": p3h},
                quantity=f"largest T the trained FCN memorizes (m={sizes['m']}, {sizes['P_fcn']} parameters), "
                         f"against Proposition 3's (n+1)m/d_out+m+1",
                paper_value=f"<= (n+1)m/d_out+m+1 = {p3:g}", where="§4.3, Proposition 3", cannot_decide=apart,
                anchor=PROPOSITION3, falsifier=f"training finds FCN weights that memorize a T above {p3:g}"),
        at_least(_attention_T(att), t1, f"{GD_REACHES_BOUND}; {att.text()}; {grid}",
                 {"T_star": att.T, "residual": att.residual, "next_T": att.next_T,
                  "next_residual": att.next_residual, "bound": t1},
                 quantity=f"largest T the trained attention layer memorizes (H={cfg.H}, {sizes['P_attention']} "
                          f"parameters), against Theorem 1's H(r-1)+1",
                 where="§4.3 beside Theorem 1", role="own",
                 cannot_decide=apart or ("" if t1_in_grid else f"the Theorem 1 bound {t1} is not on the grid")),
        info("relative residual at or below which a fit counts as memorized (the widest gap of the residuals)",
             level.level, detail=str(level), values=dataclasses.asdict(level)),
        info("FCN bound with ReLU's scaling symmetry removed, nm/d_out+m+1", p3h,
             paper_value=f"(n+1)m/d_out+m+1 = {p3:g}", where="§4.3, Proposition 3",
             detail=f"Proposition 3's (n+1)m/d_out+m+1 = {p3:g} is valid but loose by m/d_out"),
    ]


def _table(cells: list[FitCell], sizes: dict, level: GapThreshold) -> Table:
    rows = [[c.T, c.fcn_residual, "yes" if level.memorized(c.fcn_residual) else "no", c.attention_residual,
             "yes" if level.memorized(c.attention_residual) else "no", c.T <= sizes["proposition3_bound"],
             c.T <= sizes["theorem1_bound"]] for c in cells]
    return Table(f"Final relative training residual ||y_hat - y|| / ||y|| (best of the restarts) per T; memorized: "
                 f"{level}",
                 ["T", "FCN residual", "FCN memorized", "attention residual", "attention memorized",
                  "T <= Prop. 3 bound", "T <= Theorem 1 bound"],
                 rows, ["int", "float", "text", "float", "text", "text", "text"])


def _figure(cfg: FCNvsAttentionConfig, cells: list[FitCell], sizes: dict, level: GapThreshold) -> LineFigure:
    T = [c.T for c in cells]
    clip = [[max(c.fcn_residual, PLOT_FLOOR) for c in cells], [max(c.attention_residual, PLOT_FLOOR) for c in cells]]
    top = max(1.0, *clip[0], *clip[1])
    p3, t1 = sizes["proposition3_bound"], sizes["theorem1_bound"]
    lines = [series(f"ReLU FCN, m={sizes['m']} ({sizes['P_fcn']} params)", T, clip[0], color=PALETTE[0]),
             series(f"attention, H={cfg.H} ({sizes['P_attention']} params)", T, clip[1], color=PALETTE[1]),
             series(f"Proposition 3 bound {p3:g}", [p3, p3], [PLOT_FLOOR, top], style="dashed", marker=False,
                    color=PALETTE[0]),
             series(f"Theorem 1 bound {t1}", [t1, t1], [PLOT_FLOOR, top], style="dashed", marker=False,
                    color=PALETTE[1]),
             series(f"memorized at or below {level.level:.2g}", [min(T), max(T)], [level.level, level.level],
                    style="dotted", marker=False, color=PALETTE[2])]
    return line_figure("memorization-fcn-vs-attention.png",
                       f"Final training residual against data-set size T on eq. (29)'s data (d={cfg.d}, n={cfg.n}, "
                       f"d_h={cfg.d_h}), full-batch float64 L-BFGS, best of {cfg.restarts} restarts; residuals "
                       f"below {PLOT_FLOOR:g} drawn at {PLOT_FLOOR:g}. Dashed: Proposition 3's upper bound for the "
                       "FCN and Theorem 1's constructive bound for attention; dotted: the memorization level, the "
                       "geometric middle of the residuals' widest gap.",
                       series=lines, xlabel="examples T", ylabel="relative residual", yscale="log",
                       title="FCN vs attention of matched size (Prop. 3)")


def _notes(cfg: FCNvsAttentionConfig, sizes: dict) -> list[str]:
    return [
        f"Matched size: the FCN's width m = {sizes['m']} is the largest whose (n+1)d-input network has at most "
        f"the attention layer's {sizes['P_attention']} trained parameters (2Hdd_h + Hdd_v + Hd_v d + d d_out, "
        f"W_O included; the count printed after Theorem 1 leaves W_O out); the FCN has {sizes['P_fcn']}.",
        "Data: the proof's eq. (29) set, on which every FCN on x_FCN reduces to one on x^(t) in R^n (App. F); "
        "the weight map in App. F prints b_1 = b'_1 - W'_1[...]^T c_FCN, the identity needs +, and its "
        "declared shapes of W_1, W_2 do not fit W_1^T x, W_2^T ReLU(.) (see attnlab.papers.memorization.fcn).",
        f"Proposition 3's (n+1)m/d_out+m+1 = {sizes['proposition3_bound']:g} counts every parameter of "
        f"f_(n,m,d_out); ReLU's positive homogeneity removes m of them, giving nm/d_out+m+1 = "
        f"{sizes['homogeneity_bound']:g}: the paper's bound is valid but not tight.",
        "The shared context makes rank Z <= H(n-1)+1 (Proposition 2) for each fixed W_K, W_Q, but the trained "
        "attention layer moves W_K, W_Q too, so that rank does not cap what it memorizes.",
        f"FCN training uses variable projection (the output layer solved by least squares inside every loss "
        f"evaluation) and kinks initialised through data points; {cfg.restarts} restarts x {cfg.steps} L-BFGS "
        "calls of 50 iterations. Training finds a lower bound of each model's capacity, never the capacity.",
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "Prop. 3: trained ReLU FCN vs attention of matched size, final residual against T beside both bounds",
                    FCNvsAttentionConfig, run, anchors=(PROPOSITION3,),
                    cpu_only="Proposition 3's networks are small float64 problems trained by L-BFGS, "
                             "where a GPU adds kernel launches and no speed"))
