"""transformer-math.dot-product-scaling: §1.2.3: Var(q.k) = d, and what 1/sqrt(d) does to the softmax
of attention logits."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnlab.analysis.logit_scaling import attention_logit_sweep, dot_product_variance, loglog_slope
from attnlab.config import RunConfig, check_int, check_ints, check_number, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.registry import Experiment, register_experiment
from attnlab.checks import NO_ERROR, Check, above, at_most, below, near
from attnlab.results import PALETTE, ExperimentResult, Figure, line_figure, series
from attnlab.runs.rundir import log_metric

EXPERIMENT_ID = "transformer-math.dot-product-scaling"
GROW = "transformer-math.dot-products-grow"  # "the larger the dimension d ..., the larger the dot products"
RESCALE = "transformer-math.rescale-dot-products"  # "the vanishing gradient ... necessary to rescale"
DOMINATES = "transformer-math.largest-input-dominates"  # "the more the largest input dominates the output"
_DIMS = tuple(2 ** k for k in range(2, 11))  # 4, 8, ..., 1024
TORCH_OP = 0.1  # one torch op on small tensors, in small calls (~20 us against the 32 x 64 SVD's ~0.2 ms)
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

    def validate(self) -> None:
        self.normalise("dims", check_ints("dims", self.dims, minimum=1))
        if len(set(self.dims)) < 2:
            raise ConfigError("dims needs at least two different dimensions to fit a slope")
        check_int("n_samples_variance", self.n_samples_variance, minimum=2)
        check_int("n_keys", self.n_keys, minimum=2)
        check_int("n_samples_softmax", self.n_samples_softmax, minimum=1)
        check_number("n_standard_errors", self.n_standard_errors, 0, open_min=True)
        check_number("slope_tolerance", self.slope_tolerance, 0, open_min=True)

    def estimate(self) -> Estimate:
        """Time: traffic DRAW_BYTES sum_d (2 N + S (K + 1)) d + JACOBIAN_BYTES 2 |dims| S K^2,
        gemm 2 sum_d (N d + 2 S K d), calls TORCH_OP 60 |dims| (N = n_samples_variance,
        S = n_samples_softmax, K = n_keys; the constants are fitted to both presets' measured times).
        Memory: float64, chunks of 2^22 numbers (attnlab.analysis.logit_scaling): the n_samples_variance
        dot products, q, k or K of one chunk (at least one row of n_keys x d), and the softmax
        Jacobians of one chunk's rows (n_keys x n_keys each; diag(s), s s^T and their difference,
        measured): 8 (2 n_samples_variance + 4 max(2^22, n_keys d) + 3 rows n_keys^2) bytes,
        rows = min(n_samples_softmax, max(1, 2^22 / (n_keys min(dims))))."""
        chunk, d = 1 << 22, max(self.dims)
        rows = min(self.n_samples_softmax, max(1, chunk // (self.n_keys * min(self.dims))))
        need = 8 * (2 * self.n_samples_variance + 4 * max(chunk, self.n_keys * d) + 3 * rows * self.n_keys ** 2)
        # work: every d of dims, N = n_samples_variance, S = n_samples_softmax, K = n_keys:
        #   traffic  DRAW_BYTES sum_d (2 N + S K + S) d    the Gaussian draws (q, k; K, g per query)
        #            + JACOBIAN_BYTES 2 |dims| S K^2        the softmax Jacobians, raw and scaled
        #   gemm     2 sum_d (N d + 2 S K d)               the dot products and logits
        #   calls    TORCH_OP 60 |dims|                    the ops of one d
        sd = sum(self.dims)
        traffic = (DRAW_BYTES * sd * (2 * self.n_samples_variance + self.n_samples_softmax * (self.n_keys + 1))
                   + JACOBIAN_BYTES * 2 * len(self.dims) * self.n_samples_softmax * self.n_keys ** 2)
        gemm = 2.0 * sd * (self.n_samples_variance + 2 * self.n_samples_softmax * self.n_keys)
        return Estimate(need, f"{self.n_keys} keys of width up to {d} and their {self.n_keys} x {self.n_keys} "
                              "softmax Jacobians, float64", gemm=gemm, traffic=traffic,
                        calls=TORCH_OP * 60 * len(self.dims), change="lower n_keys, dims or n_samples_variance")


def run_dot_product_scaling(cfg: DotProductConfig, run_dir=None) -> ExperimentResult:
    var, soft = measure(cfg, run_dir)
    slope = loglog_slope(var["dims"], var["var_raw"])  # of log Var(q.k) against log d
    return ExperimentResult(
        summary=_summary(cfg, var, soft, slope), figures=_figures(cfg, var, soft),
        data={"variance": var, "slope": slope,
              "softmax": {**soft, "n_keys": cfg.n_keys}},
        notes=["The text writes the scaling factor as 1/sqrt(k); k there is the key "
               "dimension d_k, written d here. The errors of §1 of the text are in the report's table of "
               "errors in the text."])


def measure(cfg: DotProductConfig, run_dir=None) -> tuple[dict[str, list], dict[str, list]]:
    """Var(q.k) and Var(q.k / sqrt(d)) by d (:func:`dot_product_variance`), and the softmax of n_keys
    attention logits with and without the scale by d (:func:`attention_logit_sweep`): lists over cfg.dims,
    keyed as those functions key them."""
    g = torch.Generator(device=cfg.device).manual_seed(cfg.seed)
    kw = dict(generator=g, dtype=torch.float64, device=cfg.device)
    var = {"dims": [], "var_raw": [], "var_scaled": [], "rel_se": []}
    soft: dict[str, list] = {}
    for d in cfg.dims:  # one d at a time, so metrics.jsonl shows progress
        v = dot_product_variance([d], cfg.n_samples_variance, **kw)
        s = attention_logit_sweep([d], cfg.n_keys, cfg.n_samples_softmax, **kw)
        for k in var:
            var[k] += v[k]
        for k, x in s.items():
            if isinstance(x, list):
                soft.setdefault(k, []).extend(x)
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, "d": d,
                       "var_raw": v["var_raw"][0], "var_scaled": v["var_scaled"][0],
                       "max_prob_raw": s["max_prob_raw"][0], "max_prob_scaled": s["max_prob_scaled"][0]})
    return var, soft


def _summary(cfg: DotProductConfig, var: dict[str, list], soft: dict[str, list], slope: float) -> list[Check]:
    """Var(q.k) grows as d; the scale brings it to 1; the unscaled softmax saturates; its Jacobian's norm."""
    dims = var["dims"]
    deviation = max(abs(x - 1) for x in var["var_scaled"])
    tol = cfg.n_standard_errors * max(var["rel_se"])
    ratio = soft["jacobian_norm_raw"][-1] / soft["jacobian_norm_scaled"][-1]
    where = "§1.2.3"
    prob = soft["max_prob_raw"][-1] / soft["max_prob_scaled"][-1]
    summary = [
        near(slope, 1.0, cfg.slope_tolerance, f"d = {dims[0]}..{dims[-1]}", quantity="log-log slope of Var(q.k) "
             "against d", where=where, paper_value="grows with d", anchor=GROW,
             falsifier=f"a slope outside 1 +- {cfg.slope_tolerance:g}: dot products that do not grow like d",
             erratum=NO_ERROR),
        at_most(deviation, tol, f"N = {cfg.n_samples_variance} samples per d; tolerance {cfg.n_standard_errors:g} "
                "standard errors", quantity="max over d of |Var(q.k / sqrt(d)) - 1|", where=where,
                paper_value="1/sqrt(d) rescales", anchor=RESCALE,
                falsifier=f"Var(q.k / sqrt(d)) more than {cfg.n_standard_errors:g} standard errors from 1 at some d: "
                          "the scale would not undo the growth", erratum=NO_ERROR),
        above(prob, 1, f"{soft['max_prob_raw'][-1]:.3f} / {soft['max_prob_scaled'][-1]:.3f}; {cfg.n_keys} keys",
              quantity=f"max softmax probability at d={dims[-1]}: unscaled / scaled", where=where,
              paper_value="saturates without 1/sqrt(d)", anchor=DOMINATES,
              falsifier="the unscaled logits' largest probability no larger than the scaled ones' (ratio <= 1)",
              erratum=NO_ERROR),
        below(ratio, 1, f"{cfg.n_keys} keys, {cfg.n_samples_softmax} queries", quantity=f"E||J_s|| at d={dims[-1]}: "
              "unscaled / scaled", where=where, paper_value="vanishing gradient without 1/sqrt(d)", anchor=RESCALE,
              falsifier="the unscaled softmax Jacobian no smaller than the scaled one (ratio >= 1)", erratum=NO_ERROR),
    ]
    return summary


def _figures(cfg: DotProductConfig, var: dict[str, list], soft: dict[str, list]) -> list[Figure]:
    """Variance, Jacobian norm and entropy against d, with and without the scale."""
    dims = var["dims"]
    c_raw, c_sc = PALETTE[1], PALETTE[0]
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
                    DotProductConfig, run_dot_product_scaling, anchors=(GROW, RESCALE, DOMINATES)))
