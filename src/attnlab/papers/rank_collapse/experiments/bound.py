"""rank-collapse.bound: Theorem 2.2's doubly exponential bound against the measured residual.

Notes §2.2, Theorem 2.2 (Dong et al. 2021, Theorem 2.2, single head, no skip): for a SAN of
L layers X_l = P_l X_{l-1} W_l with P_l = softmax(X_{l-1} W_QK,l X_{l-1}^T / sqrt(d_qk)),
W_QK = W_Q W_K^T and W_l = W_V,l W_O,l (the value-output product; d x d), if
||W_QK,l||_1 ||W_l||_{1,inf} <= beta for every l then

    ||res(SAN(X))||_{1,inf} <= (4 beta / sqrt(d_qk))^{(3^L - 1)/2} ||res(X)||_{1,inf}^{3^L}.

It shrinks with L only if kappa = 4 beta ||res X||^2 / sqrt(d_qk) < 1 (then bound_L =
||res X|| kappa^{(3^L-1)/2}); for kappa >= 1 it grows doubly exponentially and is vacuous.

Measured here:

1. Random single-head SANs (d = 8, d_qk = 4, n = 8, weights N(0, 1/fan_in) times a scale s,
   so beta ~ s^4), inputs X = 1 x^T + r_0 R / ||R||_{1,inf} with R a mean-free Gaussian
   matrix (||res_mean X|| = r_0). The bound takes beta from the weights (the max over
   layers) and ||res X|| as the exact composite residual of X (the theorem's residual; the
   smallest, so the tightest bound). The output is measured by the token-mean residual,
   which is >= the exact composite residual of the same matrix: "measured <= bound" with it
   implies the theorem's inequality. Everything in float64, logs base 10 (bounds reach 10^300).
2. The doubly exponential rate: log ||res X_l|| against 3^l and against l (least squares,
   R^2 of each) for the random SANs and for pure attention in all-MiniLM-L6-v2 (pretrained and
   BERT-init random), stopping where the residual reaches float64 rounding.
3. MiniLM's own constant: beta from its weights (max over layers and heads) and the
   multi-head form of the bound (the constant times H), against MiniLM's SAN residual.

Deviation (:data:`DEVIATIONS`): the bound's input residual is the exact composite argmin (the
smallest ||X - 1 x^T||_{1,inf} over shifts), where the notes' res(X) shifts by the 2-norm argmin,
the token mean (§2.2, Definition 2.1): the smallest bound, so the strictest test. Its control, in
the same run: the violations of the bound taken from the notes' residual, ||X - 1 mean^T||_{1,inf}
= r_0 (R is mean-free).

Whose statements: the bound is the notes' (ledger entry rank-collapse.theorem-2-2; its row is
a row of the text). The notes state a bound, not a rate: that the residual decays doubly
exponentially (log r_l linear in 3^l rather than in l) is attnlab's reading, so the rate rows
are attnlab's own statements (role own), inconclusive where the fit cannot decide.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from attnlab.checks import Check, compare, equals, info
from attnlab.config import RunConfig, check_int, check_number, param
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.papers.rank_collapse.bound_measure import (BoundPoint, MiniLMSan, bound_point, log10_bound, minilm_san,
                                                        nonvacuous, san_residuals)
from attnlab.papers.rank_collapse.doubly_exponential import FLOOR
from attnlab.papers.rank_collapse.sizes import (LOAD_OPS, LP_WORK, MINILM, RANDOM, TORCH_OP, add, load_work,
                                                pass_work, scaled)
from attnlab.registry import Experiment, register_experiment
from attnlab.results import PALETTE, ExperimentResult, Figure, Table, line_figure, series
from attnlab.runs.rundir import RunDir, log_metric

EXPERIMENT_ID = "rank-collapse.bound"
SAN_LAYER_OPS = 60  # torch ops of one layer of san_residuals (circuits, norms, attention, residuals)
WHERE = "§2.2, Theorem 2.2"
THEOREM_22 = "rank-collapse.theorem-2-2"  # the ledger entry of the bound
DEVIATIONS = [Deviation(
    "composite-input-residual", "statistic",
    "the bound takes ||res X||_{1,inf} with the exact composite argmin shift (the smallest residual, so the smallest "
    "bound); the notes' res(X) shifts by the 2-norm argmin, the token mean (§2.2, Definition 2.1)",
    "the strictest test of the inequality: a SAN under this bound is under the notes' larger one",
    control="in the same run: the bound from the notes' residual ||X - 1 mean^T||_{1,inf} = r_0")]
"""Where this experiment's protocol departs from the notes' (:mod:`attnlab.deviations`)."""


@dataclass(frozen=True)
class BoundConfig(RunConfig):
    PRESETS = {"quick": {"weight_scales": (0.25, 0.5, 1.0, 2.0), "input_residuals": (0.05, 0.2, 1.0, 4.0),
                         "draws": 3, "layers": 4},
               "paper": {"weight_scales": (0.125, 0.25, 0.5, 1.0, 2.0, 4.0),
                         "input_residuals": (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0), "draws": 16, "layers": 6}}

    weight_scales: tuple[float, ...] | None = param(None, "scales s of W_Q, W_K, W_V, W_O (beta ~ s^4)")
    input_residuals: tuple[float, ...] | None = param(None, "input residuals r_0 = ||res_mean X||_{1,inf}")
    draws: int | None = param(None, "random SANs and inputs per (s, r_0)")
    layers: int | None = param(None, "depth L of the random SANs")
    d_model: int = param(8, "width d of the random SANs")
    d_qk: int = param(4, "query/key width d_qk")
    tokens: int = param(8, "tokens n of the random inputs")
    minilm_tokens: int = param(32, "tokens per text for MiniLM")
    minilm_texts: int = param(2, "texts for MiniLM")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        v = super().normal_form(values)
        for name in ("weight_scales", "input_residuals"):
            v[name] = tuple(check_number(f"every entry of {name}", x, 0, open_min=True) for x in v[name])
        return v

    def validate(self) -> None:
        for name in ("weight_scales", "input_residuals"):
            if not getattr(self, name):
                raise ConfigError(f"{name} must list at least one positive number")
        check_int("draws", self.draws, minimum=1)
        check_int("layers", self.layers, minimum=1, maximum=12)
        check_int("d_model", self.d_model, minimum=2)
        check_int("d_qk", self.d_qk, minimum=1)
        check_int("tokens", self.tokens, minimum=2)
        check_int("minilm_tokens", self.minilm_tokens, minimum=3, maximum=512)
        check_int("minilm_texts", self.minilm_texts, minimum=1)

    def estimate(self) -> Estimate:
        """One random SAN at a time, float64: the L layers' weights (W_Q, W_K d x d_qk, W_V, W_O
        d x d), the states X_0..X_L (n x d) and each layer's n x n attention with its exp:
        8 (L (2 d d_qk + 2 d^2) + (L + 2) n d + 2 L n^2) bytes, d = d_model, n = tokens.

        Time (:mod:`attnlab.papers.rank_collapse.sizes`), N = |weight_scales| |input_residuals| draws SANs:
            python   LOAD_OPS P (MiniLM loaded, the BERT-init network drawn: 2 P)
            gemm, traffic, calls   2 pass_work(MiniLM, minilm_texts, minilm_tokens)
            lapack   N LP_WORK (n d)^2              one exact composite residual per SAN
            calls    N L SAN_LAYER_OPS TORCH_OP     the ops of a layer (circuits, norms, softmax)"""
        L, d, n = self.layers, self.d_model, self.tokens
        need = 8 * (L * (2 * d * self.d_qk + 2 * d * d) + (L + 2) * n * d + 2 * L * n * n)
        sans = len(self.weight_scales) * len(self.input_residuals) * self.draws
        work = add(load_work([MINILM]),  # the pretrained checkpoint (the random network is drawn)
                   scaled(pass_work(MINILM, self.minilm_texts, self.minilm_tokens), 2),
                   {"lapack": sans * LP_WORK * (n * d) ** 2,  # one exact composite residual per SAN
                    "calls": TORCH_OP * sans * SAN_LAYER_OPS * L},
                   {"python": LOAD_OPS * RANDOM.params})  # drawing the BERT-init network
        return Estimate(need, f"{L} layers of width {d} on {n} tokens, float64", **work,
                        change="lower d_model, d_qk or tokens")


def run(cfg: BoundConfig, run_dir: RunDir | None = None) -> ExperimentResult:
    points = measure_points(cfg, run_dir)
    mini = minilm_san(cfg.minilm_texts, cfg.minilm_tokens, cfg.seed, cfg.device)
    return ExperimentResult(summary=_summary(cfg, points, mini), tables=_tables(cfg, points),
                            figures=_figures(cfg, points, mini), notes=list(NOTES), deviations=list(DEVIATIONS),
                            data={"points": [p.to_dict() for p in points],
                                  "minilm": {m: v.to_dict() for m, v in mini.items()}})


def measure_points(cfg: BoundConfig, run_dir: RunDir | None = None) -> list[BoundPoint]:
    """Every random SAN beside its bound: cfg.draws per (s, r_0), r_0 within s, in the config's order."""
    g = torch.Generator().manual_seed(cfg.seed)
    points = []
    for s in cfg.weight_scales:
        for r0 in cfg.input_residuals:
            for _ in range(cfg.draws):
                o = san_residuals(cfg.layers, cfg.d_model, cfg.d_qk, cfg.tokens, s, r0, g, cfg.device)
                points.append(bound_point(s, r0, o, cfg.d_qk))
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, "weight_scale": s, "points": len(points)})
    return points


def _summary(cfg: BoundConfig, points: list[BoundPoint], mini: dict[str, MiniLMSan]) -> list[Check]:
    """Whether the bound holds and where it says something, the doubly exponential rate, MiniLM's bound."""
    return [*_bound_checks(cfg, points), *_rate_checks(points, mini), _minilm_bound_check(mini["pretrained"])]


def _bound_checks(cfg: BoundConfig, points: list[BoundPoint]) -> list[Check]:
    """Violations of the bound, the non-vacuous SANs and the smallest margin among them."""
    # pairs whose measured residual is float64 rounding (< FLOOR ||X_l||) say nothing about the bound
    gaps = [b - m for p in points for b, m, ok in zip(p.log10_bound, p.log10_measured, p.resolved) if ok]
    rounding = sum(not ok for p in points for ok in p.resolved)
    violations = sum(gap < -1e-9 for gap in gaps)
    # the control: the same pairs under the bound from the notes' residual of X, the token mean's r_0
    notes = [log10_bound(L, p.beta, cfg.d_qk, p.r0) - m
             for p in points for L, (m, ok) in enumerate(zip(p.log10_measured, p.resolved), start=1) if ok]
    notes_violations = sum(gap < -1e-9 for gap in notes)
    control = (f"the bound from the notes' residual (token mean, ||res X|| = r_0), same SANs: {notes_violations} "
               f"violations -> {'reproduced' if notes_violations == 0 else 'differs'}")
    nonvac = nonvacuous(points)
    useful = [b - m for p in nonvac for b, m, ok in zip(p.log10_bound, p.log10_measured, p.resolved) if ok]
    return [
        equals(violations, 0, quantity="(layer, SAN) pairs where the measured residual exceeds the bound",
               paper_value="never (an upper bound)", where=WHERE, anchor=THEOREM_22,
               falsifier="a (layer, SAN) pair above float64 rounding whose measured residual exceeds the bound "
                         "(log10 gap below -1e-9)",
               deviations=("composite-input-residual",),
               detail=f"{len(gaps)} pairs ({rounding} more at float64 rounding, < {FLOOR:g} ||X_l||, left out); "
                      f"{len(points)} SANs (d={cfg.d_model}, d_qk={cfg.d_qk}, n={cfg.tokens}, L={cfg.layers}); "
                      "bound from the exact composite residual of X (the smallest), output measured by the token "
                      "mean (the notes' residual, >= the composite one): the strictest pairing",
               values={"pairs": len(gaps), "at_rounding": rounding, "sans": len(points),
                       "violations_notes_residual": notes_violations}
               ).with_control(control, agrees=(notes_violations == 0) == (violations == 0)),
        info("SANs whose bound at L=1 is below the input residual (non-vacuous)", len(nonvac),
             paper_value="needs kappa = 4 beta ||res X||^2 / sqrt(d_qk) < 1", where=WHERE,
             detail=f"of {len(points)}; largest kappa among them: "
                    + (f"{max(p.kappa for p in nonvac):.3g}" if nonvac else "-")),
        info("min over non-vacuous cases of log10(bound / measured)", round(min(useful), 4) if useful else None,
             where=WHERE, detail="how many orders of magnitude the bound leaves, where it says anything"),
    ]


def _rate_checks(points: list[BoundPoint], mini: dict[str, MiniLMSan]) -> list[Check]:
    """The 3^l fit against the l fit: MiniLM's SANs, then the random SANs inside and outside the regime."""
    out = []
    for m, what in (("pretrained", "pretrained all-MiniLM-L6-v2"), ("random", "BERT-init MiniLM")):
        f = mini[m].fit
        few = f.points < 4
        out.append(compare(
            f"{what}, SAN: R^2 of log10 r_l against 3^l minus R^2 against l",
            float("nan") if f.triple_r2 is None else f.triple_r2 - f.linear_r2, ">=", 0.0,
            paper_value="doubly exponential decay (3^L in the exponent)", where=WHERE, role="own",
            cannot_decide=(f"only {f.points} layers above float64 rounding: a fit over them does not decide the "
                           "rate" if few else "another model: multi-head MiniLM, the theorem's single-head SAN"),
            detail=("-" if f.triple_r2 is None else f"{f.triple_r2:.4f} vs {f.linear_r2:.4f}")
                   + f"; {f.points} layers above {FLOOR:g}; relative residual (token mean)",
            values=f.to_dict()) if f.triple_r2 is not None else info(
            f"{what}, SAN: layers above float64 rounding", f.points, where=WHERE,
            detail="fewer than 3: no fit of the rate"))
    nonvac = nonvacuous(points)
    inside = [p.fit for p in nonvac if p.fit.triple_r2 is not None]
    outside = [p.fit for p in points if p not in nonvac and p.fit.triple_r2 is not None]
    if inside:
        better = sum(f.triple_r2 >= f.linear_r2 for f in inside)
        out.append(equals(better, len(inside), quantity="random SANs with kappa < 1 (the bound's regime) where "
                          "log r_l fits 3^l at least as well as l", paper_value="doubly exponential decay",
                          where=WHERE + " (regime: kappa = 4 beta ||res X||^2 / sqrt(d_qk) < 1)", role="own",
                          cannot_decide="" if len(inside) >= 3 else
                          f"only {len(inside)} SAN(s) in the regime keep 3 or more layers above float64 rounding "
                          "(claim rank-collapse.doubly-exponential-rate measures the rate on 32 SANs)",
                          detail="R^2 of least squares over the layers above float64 rounding",
                          values={"fits": [f.to_dict() for f in inside]}))
    if outside:
        out.append(info("random SANs with kappa >= 1 where log r_l fits 3^l at least as well as l",
                        sum(f.triple_r2 >= f.linear_r2 for f in outside), where=WHERE,
                        detail=f"of {len(outside)}: outside the regime the bound says nothing and the decay "
                               "need not be doubly exponential (sharp logits)"))
    return out


def _minilm_bound_check(p: MiniLMSan) -> Check:
    """The multi-head bound of pretrained MiniLM at L=1 (vacuous)."""
    return info("all-MiniLM-L6-v2: log10 of the multi-head bound at L=1", round(p.log10_bound[0], 4),
                paper_value="the bound needs 4 H beta ||res X||^2 / sqrt(d_qk) < 1", where=WHERE,
                detail=f"beta = max ||W_QK||_1 ||W_OV||_1,inf = {p.beta:.3g}; log10 bound "
                       f"{p.log10_bound[-1]:.3g} at L={len(p.log10_bound)}; "
                       f"||res X_0|| = {p.res0:.3g} "
                       f"(token mean), H = {p.H}, d_qk = {p.d_qk}: vacuous")


def _figures(cfg: BoundConfig, points: list[BoundPoint], mini: dict[str, MiniLMSan]) -> list[Figure]:
    """Bound against measurement, where the bound holds and says something, and the 3^l decay."""
    picks = sorted(points, key=lambda q: q.kappa)
    return [_bound_figure(cfg, picks), _regimes_figure(cfg, picks), _rate_figure(mini, picks)]


def _bound_figure(cfg: BoundConfig, picks: list[BoundPoint]) -> Figure:
    """Measured residual and bound per layer for four SANs from the smallest to the largest kappa."""
    chosen = [picks[0], picks[len(picks) // 3], picks[2 * len(picks) // 3], picks[-1]]
    lines = []
    for i, q in enumerate(chosen):
        Ls = list(range(cfg.layers + 1))
        measured = [m if ok else None for m, ok in zip(q.log10_measured, q.resolved)]
        lines.append(series(f"measured, kappa={q.kappa:.2g}", Ls, [math.log10(q.res0), *measured],
                            color=PALETTE[i]))
        lines.append(series(f"bound, kappa={q.kappa:.2g}", Ls,
                            [math.log10(q.res0), *(min(b, 60.0) for b in q.log10_bound)],
                            style="dashed", marker=False, color=PALETTE[i]))
    return line_figure(
        "bound-vs-measured.png",
        "Theorem 2.2 on random single-head SANs: log10 ||res X_l||_{1,inf} measured (solid; token-mean "
        "residual, an upper bound of the exact composite one) and the bound (4 beta / sqrt(d_qk))^{(3^l-1)/2} "
        "||res X||^{3^l} (dashed; ||res X|| the exact composite residual of the input), for four SANs from "
        "the smallest to the largest kappa = 4 beta ||res X||^2 / sqrt(d_qk). Bounds above 10^60 are drawn at 60; "
        "measured points at float64 rounding (< 1e-13 ||X_l||) are left out.",
        series=lines, xlabel="layer l", ylabel="log10 residual", title="Bound vs measured")


def _regimes_figure(cfg: BoundConfig, order: list[BoundPoint]) -> Figure:
    """log10(bound / measured) and log10(bound / input residual) against kappa (``order``: by kappa)."""
    reg = []
    for L in range(1, min(cfg.layers, 3) + 1):
        reg.append(series(f"bound / measured, L={L}", [q.kappa for q in order],
                          [min(q.log10_bound[L - 1] - q.log10_measured[L - 1], 60.0)
                           if q.resolved[L - 1] else None for q in order],
                          color=PALETTE[L - 1]))
        reg.append(series(f"bound / input residual, L={L}", [q.kappa for q in order],
                          [min(q.log10_bound[L - 1] - math.log10(q.res0), 60.0) for q in order],
                          style="dashed", marker=False, color=PALETTE[L - 1]))
    return line_figure(
        "bound-regimes.png",
        "Where Theorem 2.2 holds and where it says something, against kappa = 4 beta ||res X||^2 / sqrt(d_qk). "
        "Solid: log10(bound / measured), >= 0 everywhere (the bound holds). Dashed: log10(bound / ||res X||); "
        "above 0 the bound exceeds the input residual and is vacuous, which happens as soon as kappa > 1. "
        "Values above 60 are drawn at 60; pairs whose measured residual is float64 rounding are left out.",
        series=reg, xlabel="kappa", ylabel="log10 ratio", xscale="log", title="Holds / vacuous")


def _rate_figure(mini: dict[str, MiniLMSan], picks: list[BoundPoint]) -> Figure:
    """log10 relative residual against 3^l: MiniLM's SANs and the median-kappa random SAN (``picks``: by kappa)."""
    fit_lines = []
    for i, (m, what) in enumerate((("pretrained", "MiniLM pretrained, SAN"), ("random", "MiniLM BERT-init, SAN"))):
        ys = mini[m].relative
        pts = [(3**l, math.log10(y)) for l, y in enumerate(ys) if y > FLOOR]
        fit_lines.append(series(what, [x for x, _ in pts], [y for _, y in pts], color=PALETTE[i]))
    mid = picks[len(picks) // 2]
    rel = [1.0, *(10 ** (m - math.log10(mid.res0)) for m in mid.log10_measured)]
    pts = [(3**l, math.log10(y)) for l, y in enumerate(rel) if y > FLOOR]
    fit_lines.append(series(f"random SAN, kappa={mid.kappa:.2g}", [x for x, _ in pts], [y for _, y in pts],
                            color=PALETTE[2]))
    return line_figure(
        "doubly-exponential.png",
        "log10 of the relative residual (token mean) of pure attention against 3^l: a straight line is the "
        "doubly exponential decay of Theorem 2.2. Points at float64 rounding (< 1e-13) are left out. The "
        "random SAN is normalised by its input residual.",
        series=fit_lines, xlabel="3^l", ylabel="log10 relative residual", xscale="log",
        title="Doubly exponential collapse")


def _median_cell(points: list[BoundPoint], s: float, r0: float,
                 value: Callable[[BoundPoint], float | None]) -> float | None:
    """The median of ``value`` over the draws at (s, r_0), Nones left out; None when every value is."""
    values = sorted(v for v in (value(q) for q in points if q.scale == s and q.r0 == r0) if v is not None)
    return values[len(values) // 2] if values else None


def _layer_cells(cfg: BoundConfig, points: list[BoundPoint], s: float, r0: float, L: int) -> list[float | None]:
    """Median log10 bound and log10 measured at depth L + 1 (measured at rounding left out); None past the last layer."""
    if L >= cfg.layers:
        return [None, None]
    return [_median_cell(points, s, r0, lambda q: q.log10_bound[L]),
            _median_cell(points, s, r0, lambda q: q.log10_measured[L] if q.resolved[L] else None)]


def _tables(cfg: BoundConfig, points: list[BoundPoint]) -> list[Table]:
    """Per (weight scale, input residual) the medians of beta, kappa, the bound and the measurement at L = 1, 2."""
    return [Table("Theorem 2.2: per (weight scale s, input residual r_0) the median over draws; measured "
                  "values at float64 rounding are left out (empty: all were)",
                  ["s", "r_0", "beta", "kappa", "log10 bound L=1", "log10 measured L=1", "log10 bound L=2",
                   "log10 measured L=2"],
                  [[s, r0, _median_cell(points, s, r0, lambda q: q.beta),
                    _median_cell(points, s, r0, lambda q: q.kappa),
                    *_layer_cells(cfg, points, s, r0, 0), *_layer_cells(cfg, points, s, r0, 1)]
                   for s in cfg.weight_scales for r0 in cfg.input_residuals],
                  ["float"] * 8)]


NOTES = (
    "The notes state Theorem 2.2 without Dong et al.'s gamma (a constant >= 1 in their statement); the bound "
    "drawn here is the notes' (smaller, so harder to satisfy), and it still holds in every case measured.",
    "beta is computed from the weights: ||W_QK||_1 (max column abs sum) times ||W_V W_O||_{1,inf} "
    "(composite norm), max over layers; biases only add terms constant along softmax rows or a shift 1 b^T, "
    "which the residual removes, so the random SANs here have none.",
    "For MiniLM the bound is vacuous at every depth (log10 of it in the summary, against an input residual "
    "of about 10^2): its input residual is in the tens and beta far above the threshold, so the theorem "
    "says nothing about trained models, while its SAN "
    "still collapses doubly exponentially.",
)


register_experiment(Experiment(EXPERIMENT_ID,
                    "Theorem 2.2: the doubly exponential bound vs measured residuals (where it holds, where it is "
                    "vacuous) and the 3^L fit",
                    BoundConfig, run, anchors=(THEOREM_22,)))
