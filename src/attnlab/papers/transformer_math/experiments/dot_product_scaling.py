"""transformer-math.dot-product-scaling: §1.2.3: Var(q.k) = d, and what 1/sqrt(d) does to the softmax
of attention logits, query by query.

The text's statements are about one softmax ("for large inputs the softmax function is generating
outputs which closely resemble the values in (9)"; "To tackle the problem of the vanishing gradient is
necessary to rescale the dot products"), so the softmax rows are judged on the distribution over
queries of the per-query ratio unscaled / scaled (its median: what most queries see; its quantiles in
the detail), not on a ratio of means (:mod:`attnlab.papers.transformer_math.query_softmax`). The
ratio of the mean Jacobian norms, which near-tied queries dominate, is shown as info.

Deviations (:data:`DEVIATIONS`): the text gives no distribution of queries and keys and names no
norm for "the vanishing gradient". attnlab draws Gaussian entries and measures ||J_s||_F; every text
row is also measured with uniform entries of the same mean and variance (a control run, smaller
sizes, in the same run), and the Jacobian row also with the gradient that reaches the logits,
||J_s^T g||; a row is decided only when its controls give its verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from attnlab.analysis.logit_scaling import loglog_slope
from attnlab.checks import NO_ERROR, Check, above, at_most, below, info, near
from attnlab.config import RunConfig, check_choice, check_int, check_ints, check_number, param
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, total
from attnlab.papers.transformer_math.query_softmax import (
    DISTRIBUTIONS,
    QUANTILES,
    dot_product_variance,
    query_statistics,
    ratio_summary,
)
from attnlab.registry import Experiment, register_experiment
from attnlab.results import PALETTE, ExperimentResult, Figure, line_figure, series
from attnlab.runs.rundir import log_metric

EXPERIMENT_ID = "transformer-math.dot-product-scaling"
GROW = "transformer-math.dot-products-grow"  # "the larger the dimension d ..., the larger the dot products"
RESCALE = "transformer-math.rescale-dot-products"  # "the vanishing gradient ... necessary to rescale"
DOMINATES = "transformer-math.largest-input-dominates"  # "the more the largest input dominates the output"
_DIMS = tuple(2 ** k for k in range(2, 11))  # 4, 8, ..., 1024
TORCH_OP = 0.1  # one torch op on small tensors, in small calls (~20 us against the 32 x 64 SVD's ~0.2 ms)
GAUSSIAN = Deviation(
    "gaussian-inputs", "data",
    "queries and keys with i.i.d. N(0, 1) entries, float64",
    "the text argues about dot products in general and states no distribution; its argument (like Vaswani et "
    "al.'s footnote 4) needs independent entries of mean 0 and variance 1, which Gaussian entries have",
    control="in the same run: every text row measured again with uniform entries on [-sqrt(3), sqrt(3)] (mean 0, "
            "variance 1, not Gaussian) at smaller sizes (control_samples_variance, control_samples_softmax)")
FROBENIUS = Deviation(
    "jacobian-frobenius", "statistic",
    "the vanishing gradient measured as the Frobenius norm of the softmax Jacobian J_s = diag(s) - s s^T (eq. 8), "
    "per query",
    "the text says the Jacobian 'becomes zero' at one-hot outputs (eq. 9) and names no norm",
    control="in the same run: the norm of the gradient that reaches the logits, ||J_s^T g|| for a random unit "
            "upstream gradient g, per query")
DEVIATIONS = (GAUSSIAN, FROBENIUS)
# Fitted to both presets measured in one process on 2 idle cores (copy traffic measured at 30 GB/s there):
# quick 0.91 s, paper 214.6 s (results/paper-scale/transformer-math-dot-product-scaling). The constants
# fitted to the quick preset alone (1000 and 4000 bytes) put the paper preset at 29 min: 8x its time.
DRAW_BYTES = 470.0  # one float64 Gaussian draw, in bytes of copy traffic (~16 ns a number)
JACOBIAN_BYTES = 560.0  # one entry of a softmax Jacobian with its norms and products, in bytes of traffic (~19 ns)


@dataclass(frozen=True)
class DotProductConfig(RunConfig):
    PRESETS = {"quick": {"dims": _DIMS, "n_samples_variance": 4000, "n_keys": 64, "n_samples_softmax": 192},
               "paper": {"dims": _DIMS, "n_samples_variance": 100_000, "n_keys": 512, "n_samples_softmax": 2000}}

    dims: tuple[int, ...] | None = param(None, "key dimensions d")
    n_samples_variance: int | None = param(None, "draws of q.k per d")
    n_keys: int | None = param(None, "keys per query for the softmax statistics")
    n_samples_softmax: int | None = param(None, "queries per d for the softmax statistics")
    n_standard_errors: float = param(4.0, "standard errors |Var(q.k/sqrt(d)) - 1| may deviate")
    slope_tolerance: float = param(0.05, "allowed |slope - 1| of log Var(q.k) against log d")
    control_distribution: str = param("uniform", "entries of q and k in the control run (the text states no "
                                                 "distribution; the main run draws gaussian ones)")
    control_samples_variance: int = param(4000, "draws of q.k per d in the control run (at most n_samples_variance)")
    control_samples_softmax: int = param(192, "queries per d in the control run (at most n_samples_softmax)")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        v = super().normal_form(values)
        v["dims"] = check_ints("dims", v["dims"], minimum=1)
        return v

    def validate(self) -> None:
        if len(set(self.dims)) < 2:
            raise ConfigError("dims needs at least two different dimensions to fit a slope")
        check_int("n_samples_variance", self.n_samples_variance, minimum=2)
        check_int("n_keys", self.n_keys, minimum=2)
        check_int("n_samples_softmax", self.n_samples_softmax, minimum=1)
        check_number("n_standard_errors", self.n_standard_errors, 0, open_min=True)
        check_number("slope_tolerance", self.slope_tolerance, 0, open_min=True)
        check_choice("control_distribution", self.control_distribution,
                     tuple(x for x in DISTRIBUTIONS if x != "gaussian"))
        check_int("control_samples_variance", self.control_samples_variance, minimum=2)
        check_int("control_samples_softmax", self.control_samples_softmax, minimum=1)

    def estimate(self) -> Estimate:
        """The main run and the control run (:func:`measure`), one after the other.

        Time of one run: traffic DRAW_BYTES sum_d (2 N + S (K + 1)) d + JACOBIAN_BYTES 2 |dims| S K^2,
        gemm 2 sum_d (N d + 2 S K d), calls TORCH_OP 60 |dims| (N = draws of q.k, S = queries, K =
        n_keys; the constants are fitted to both presets' measured times, before the control run was added);
        the control run has N = min(control_samples_variance, n_samples_variance) and S =
        min(control_samples_softmax, n_samples_softmax).
        Memory: float64, chunks of 2^22 numbers (attnlab.analysis.logit_scaling): the n_samples_variance
        dot products, q, k or K of one chunk (at least one row of n_keys x d), the softmax Jacobians
        of at most 2^22 / n_keys^2 queries at a time (n_keys x n_keys each; diag(s), s s^T and their
        difference, measured), and the per-query statistics (16 per query): 8 (2 n_samples_variance +
        4 max(2^22, n_keys d) + 3 rows n_keys^2 + 16 n_samples_softmax) bytes, rows = min(n_samples_softmax,
        max(1, 2^22 / n_keys^2))."""
        chunk, d = 1 << 22, max(self.dims)
        rows = min(self.n_samples_softmax, max(1, chunk // self.n_keys ** 2))
        need = 8 * (2 * self.n_samples_variance + 4 * max(chunk, self.n_keys * d) + 3 * rows * self.n_keys ** 2
                    + 16 * self.n_samples_softmax)
        main = self._run_estimate(need, self.n_samples_variance, self.n_samples_softmax)
        control = self._run_estimate(need, min(self.control_samples_variance, self.n_samples_variance),
                                     min(self.control_samples_softmax, self.n_samples_softmax))
        return total([main, control], main.what)

    def _run_estimate(self, need: float, N: int, S: int) -> Estimate:
        # work: every d of dims, N draws of q.k, S queries, K = n_keys:
        #   traffic  DRAW_BYTES sum_d (2 N + S K + S) d    the draws (q, k; K, g per query)
        #            + JACOBIAN_BYTES 2 |dims| S K^2        the softmax Jacobians, raw and scaled
        #   gemm     2 sum_d (N d + 2 S K d)               the dot products and logits
        #   calls    TORCH_OP 60 |dims|                    the ops of one d
        sd, K = sum(self.dims), self.n_keys
        traffic = DRAW_BYTES * sd * (2 * N + S * (K + 1)) + JACOBIAN_BYTES * 2 * len(self.dims) * S * K ** 2
        gemm = 2.0 * sd * (N + 2 * S * K)
        return Estimate(need, f"{K} keys of width up to {max(self.dims)} and their {K} x {K} softmax Jacobians, "
                              "float64", gemm=gemm, traffic=traffic, calls=TORCH_OP * 60 * len(self.dims),
                        change="lower n_keys, dims or n_samples_variance")


def run(cfg: DotProductConfig, run_dir=None) -> ExperimentResult:
    var, soft, queries = measure(cfg, run_dir)
    ctl_var, ctl_soft, ctl_queries = measure(cfg, None, control=True)
    slope = loglog_slope(var["dims"], var["var_raw"])  # of log Var(q.k) against log d
    summary = _summary(cfg, var, soft, queries, slope, (ctl_var, ctl_soft, ctl_queries))
    return ExperimentResult(
        summary=summary, figures=_figures(cfg, var, soft, queries),
        data={"variance": var, "slope": slope, "softmax": {**soft, "n_keys": cfg.n_keys}, "per_query": queries,
              "control": {"distribution": cfg.control_distribution, "variance": ctl_var,
                          "slope": loglog_slope(ctl_var["dims"], ctl_var["var_raw"]),
                          "softmax": {**ctl_soft, "n_keys": cfg.n_keys}, "per_query": ctl_queries}},
        deviations=list(DEVIATIONS),
        notes=["The text writes the scaling factor as 1/sqrt(k); k there is the key "
               "dimension d_k, written d here. The errors of §1 of the text are in the report's table of "
               "errors in the text.",
               "The softmax rows are judged query by query (the text's statements are about one softmax): the "
               "median over queries of the per-query ratio unscaled / scaled, with its quantiles. The ratio of the "
               "means is another statistic, dominated by the queries whose two largest unscaled logits nearly tie "
               "(a 2-way split, ||J_s|| about 1/2): it is shown as info."])


def measure(cfg: DotProductConfig, run_dir=None, *, control: bool = False) -> tuple[dict, dict, dict]:
    """Var(q.k) and Var(q.k / sqrt(d)) by d, the means over queries of the softmax statistics of n_keys
    attention logits with and without the scale by d, and per d the summary of each per-query ratio
    (:func:`~attnlab.papers.transformer_math.query_softmax.ratio_summary`): lists over cfg.dims.

    control=True: the control run, with cfg.control_distribution entries and control_samples_* draws
    (its own generator, seeded seed + 1). Gaussian draws come in the order of
    attnlab.analysis.logit_scaling (same numbers as its dot_product_variance and attention_logit_sweep)."""
    g = torch.Generator(device=cfg.device).manual_seed(cfg.seed + int(control))
    dist = cfg.control_distribution if control else "gaussian"
    n_var = min(cfg.control_samples_variance, cfg.n_samples_variance) if control else cfg.n_samples_variance
    n_soft = min(cfg.control_samples_softmax, cfg.n_samples_softmax) if control else cfg.n_samples_softmax
    kw = dict(generator=g, dtype=torch.float64, device=cfg.device, distribution=dist)
    var = {"dims": [], "var_raw": [], "var_scaled": [], "rel_se": []}
    soft: dict[str, list] = {"dims": list(cfg.dims)}
    queries: dict[str, list] = {"jacobian_norm": [], "gradient_norm": [], "max_prob": []}
    for d in cfg.dims:  # one d at a time, so metrics.jsonl shows progress
        v = dot_product_variance([d], n_var, **kw)
        for k in var:
            var[k] += v[k]
        s = query_statistics(d, cfg.n_keys, n_soft, **kw)
        for k, x in s.items():
            soft.setdefault(k, []).append(float(x.mean()))
        for stat in queries:
            queries[stat].append(ratio_summary(s[f"{stat}_raw"], s[f"{stat}_scaled"]))
        if not control:
            log_metric(run_dir, {"experiment": EXPERIMENT_ID, "d": d, "var_raw": v["var_raw"][0],
                                 "var_scaled": v["var_scaled"][0], "max_prob_raw": soft["max_prob_raw"][-1],
                                 "max_prob_scaled": soft["max_prob_scaled"][-1],
                                 "median_jacobian_ratio": queries["jacobian_norm"][-1]["q50"]})
    return var, soft, queries


WHERE = "§1.2.3"


def _rows(cfg: DotProductConfig, var: dict, queries: dict, slope: float, n_var: int, n_soft: int,
          label: str = "") -> dict[str, Check]:
    """The text rows of one run (the main one, or a control, ``label`` naming it), by key: "grow", "rescale",
    "dominates", "jacobian", "gradient" (the Jacobian row measured with ||J_s^T g||)."""
    dims = var["dims"]
    deviation = max(abs(x - 1) for x in var["var_scaled"])
    tol = cfg.n_standard_errors * max(var["rel_se"])
    jac, grad, prob = (queries[k][-1] for k in ("jacobian_norm", "gradient_norm", "max_prob"))
    d = dims[-1]
    below1 = next((x for i, x in enumerate(dims) if all(q["q50"] < 1 for q in queries["jacobian_norm"][i:])), None)

    def quantiles(r: dict) -> str:
        return ", ".join(f"{round(100 * q)}%: {r[f'q{round(100 * q)}']:.3g}" for q in QUANTILES)

    return {
        "grow": near(slope, 1.0, cfg.slope_tolerance, f"d = {dims[0]}..{d}; {n_var} draws of q.k per d" + label,
                     quantity="log-log slope of Var(q.k) against d", where=WHERE, paper_value="grows with d",
                     anchor=GROW, erratum=NO_ERROR, deviations=(GAUSSIAN.id,),
                     falsifier=f"a slope outside 1 +- {cfg.slope_tolerance:g}: dot products that do not grow like d"),
        "rescale": at_most(deviation, tol, f"N = {n_var} samples per d; tolerance {cfg.n_standard_errors:g} standard "
                           "errors" + label, quantity="max over d of |Var(q.k / sqrt(d)) - 1|", where=WHERE,
                           paper_value="1/sqrt(d) rescales", anchor=RESCALE, erratum=NO_ERROR,
                           deviations=(GAUSSIAN.id,),
                           falsifier=f"Var(q.k / sqrt(d)) more than {cfg.n_standard_errors:g} standard errors from 1 "
                                     "at some d: the scale would not undo the growth"),
        "dominates": above(prob["q50"], 1, f"per-query quantiles {quantiles(prob)}; {prob['share_below_1']:.0%} of "
                           f"{n_soft} queries below 1; {cfg.n_keys} keys" + label,
                           quantity=f"median over queries of the largest softmax probability at d={d}: unscaled / "
                                    "scaled", where=WHERE, paper_value="saturates without 1/sqrt(d)",
                           anchor=DOMINATES, erratum=NO_ERROR, deviations=(GAUSSIAN.id,), values=prob,
                           falsifier="most queries' unscaled largest probability no larger than the scaled one "
                                     "(median ratio <= 1)"),
        "jacobian": below(jac["q50"], 1, f"per-query quantiles {quantiles(jac)}; {jac['share_below_1']:.0%} of "
                          f"{n_soft} queries have the smaller Jacobian unscaled; "
                          + (f"the median ratio is below 1 from d = {below1} on" if below1 is not None else
                             "the median ratio is not below 1 at the largest d")
                          + f"; {cfg.n_keys} keys" + label,
                          quantity=f"median over queries of ||J_s||_F at d={d}: unscaled / scaled", where=WHERE,
                          paper_value="vanishing gradient without 1/sqrt(d)", anchor=RESCALE, erratum=NO_ERROR,
                          deviations=(GAUSSIAN.id, FROBENIUS.id),
                          values={**jac, "median_by_d": [q["q50"] for q in queries["jacobian_norm"]], "dims": dims},
                          falsifier="most queries' unscaled softmax Jacobian no smaller than the scaled one "
                                    "(median ratio >= 1)"),
        "gradient": below(grad["q50"], 1, f"per-query quantiles {quantiles(grad)}" + label,
                          quantity=f"median over queries of ||J_s^T g|| at d={d}: unscaled / scaled", where=WHERE,
                          anchor=RESCALE, erratum=NO_ERROR, values=grad,
                          falsifier="most queries' gradient at the unscaled logits no smaller than at the scaled "
                                    "ones"),
    }


def _controlled(row: Check, controls: list[tuple[str, Check]]) -> Check:
    """``row`` with its controls (:meth:`Check.with_control`): decided when every control run gives its
    verdict, else inconclusive because a control disagrees."""
    said = "; ".join(f"{what}: {c.measured_text}, required {c.criterion} -> "
                     f"{'the same verdict' if c.outcome is row.outcome else 'another verdict'}" for what, c in controls)
    return row.with_control(said, agrees=all(c.outcome is row.outcome for _, c in controls))


def _summary(cfg: DotProductConfig, var: dict, soft: dict, queries: dict, slope: float, control: tuple) -> list[Check]:
    """The text's rows, each with its controls (module docstring), and the ratio of the means as info."""
    main = _rows(cfg, var, queries, slope, cfg.n_samples_variance, cfg.n_samples_softmax)
    ctl_var, _, ctl_q = control
    n_var = min(cfg.control_samples_variance, cfg.n_samples_variance)
    n_soft = min(cfg.control_samples_softmax, cfg.n_samples_softmax)
    ctl = _rows(cfg, ctl_var, ctl_q, loglog_slope(ctl_var["dims"], ctl_var["var_raw"]), n_var, n_soft)
    other = f"{cfg.control_distribution} entries, {n_var} draws of q.k and {n_soft} queries per d"
    summary = [_controlled(main[k], [(other, ctl[k])]) for k in ("grow", "rescale", "dominates")]
    summary.append(_controlled(main["jacobian"], [(other, ctl["jacobian"]),
                                                  ("the gradient at the logits ||J_s^T g||, same queries",
                                                   main["gradient"])]))
    jac = queries["jacobian_norm"][-1]
    d = var["dims"][-1]
    summary.append(info(f"mean ||J_s||_F at d={d}: unscaled / scaled (a ratio of means)", jac["ratio_of_means"],
                        where=WHERE, paper_value="vanishing gradient without 1/sqrt(d)",
                        detail=f"{soft['jacobian_norm_raw'][-1]:.3g} / {soft['jacobian_norm_scaled'][-1]:.3g}; "
                               f"the tenth of the queries with the largest unscaled norm carry "
                               f"{jac['top_tenth_share_of_raw_mean']:.0%} of the unscaled mean (near-tied top two "
                               "logits: a 2-way split); another statistic than the text's per-softmax statement",
                        values={"ratio_of_means": jac["ratio_of_means"],
                                "top_tenth_share": jac["top_tenth_share_of_raw_mean"]}))
    return summary


def _figures(cfg: DotProductConfig, var: dict[str, list], soft: dict[str, list], queries: dict) -> list[Figure]:
    """Variance, the per-query Jacobian ratio, the mean Jacobian norm and entropy against d, with and without
    the scale."""
    dims = var["dims"]
    c_raw, c_sc = PALETTE[1], PALETTE[0]
    jac = queries["jacobian_norm"]
    return [
        line_figure("dot-product-variance.png",
                    f"Sample variance of q.k and of q.k/sqrt(d) for q, k ~ N(0, I_d) "
                    f"({cfg.n_samples_variance} samples per d), with the theory lines d and 1.",
                    series=[series(r"Var$(q\cdot k)$", dims, var["var_raw"], color=c_raw),
                            series("theory: $d$", dims, dims, style="dashed", marker=False, color=c_raw),
                            series(r"Var$(q\cdot k/\sqrt{d})$", dims, var["var_scaled"], color=c_sc),
                            series("theory: 1", dims, [1.0] * len(dims), style="dashed", marker=False, color=c_sc)],
                    xlabel="key dimension d", ylabel="variance", xscale="log", yscale="log",
                    title="Dot products grow like d; 1/sqrt(d) keeps them O(1)"),
        line_figure("dot-product-jacobian-ratio.png",
                    f"Per query, ||J_s|| of the unscaled logits over ||J_s|| of the scaled ones ({cfg.n_keys} keys, "
                    f"{cfg.n_samples_softmax} queries per d): the median (solid), the 25-75% and 10-90% quantiles "
                    "(dashed, dotted), and the ratio of the means (dash-dot), which the near-tied queries dominate. "
                    "Below 1: the unscaled softmax has the smaller Jacobian (the vanishing gradient).",
                    series=[series("median", dims, [q["q50"] for q in jac], color=c_raw),
                            series("25%", dims, [q["q25"] for q in jac], style="dashed", marker=False, color=c_raw),
                            series("75%", dims, [q["q75"] for q in jac], style="dashed", marker=False, color=c_raw),
                            series("10%", dims, [q["q10"] for q in jac], style="dotted", marker=False, color=c_raw),
                            series("90%", dims, [q["q90"] for q in jac], style="dotted", marker=False, color=c_raw),
                            series("ratio of the means", dims, [q["ratio_of_means"] for q in jac], style="dashdot",
                                   color=c_sc),
                            series("1", dims, [1.0] * len(dims), style="dashed", marker=False, color="#777777")],
                    xlabel="key dimension d", ylabel=r"$\|J_s(z)\|_F / \|J_s(z/\sqrt{d})\|_F$", xscale="log",
                    yscale="log", title="Per query: unscaled over scaled softmax Jacobian"),
        line_figure("dot-product-gradient.png",
                    f"Mean Frobenius norm of the softmax Jacobian of attention logits q.k_j over "
                    f"{cfg.n_keys} keys, with and without the 1/sqrt(d) scaling.",
                    series=[series(r"unscaled $q\cdot k_j$", dims, soft["jacobian_norm_raw"], color=c_raw),
                            series(r"scaled $q\cdot k_j/\sqrt{d}$", dims, soft["jacobian_norm_scaled"], color=c_sc)],
                    xlabel="key dimension d", ylabel=r"mean $\|J_s\|_F$", xscale="log", yscale="log",
                    title="Gradient through softmax vs key dimension"),
        line_figure("dot-product-entropy.png",
                    f"Mean softmax entropy of attention logits over {cfg.n_keys} keys; "
                    f"log n = {math.log(cfg.n_keys):.3f} is uniform attention, 0 is one-hot.",
                    series=[series(r"unscaled $q\cdot k_j$", dims, soft["entropy_raw"], color=c_raw),
                            series(r"scaled $q\cdot k_j/\sqrt{d}$", dims, soft["entropy_scaled"], color=c_sc),
                            series("log n (uniform)", dims, [math.log(cfg.n_keys)] * len(dims),
                                   style="dashed", marker=False, color="#777777")],
                    xlabel="key dimension d", ylabel="entropy (nats)", xscale="log",
                    title="Softmax entropy vs key dimension"),
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "§1.2.3: Var(q.k) = d, and 1/sqrt(d) keeps the softmax of attention logits unsaturated",
                    DotProductConfig, run, anchors=(GROW, RESCALE, DOMINATES)))
