"""Claims about scaling the dot products by 1/sqrt(d_k) (math text §1.2.3)."""

from __future__ import annotations

import torch

from attnlab.analysis.logit_scaling import dot_product_variance, loglog_slope
from attnlab.checks import Check, at_most
from attnlab.registry import claim

DIMS = (16, 64, 256)
N_SAMPLES = 1 << 14
N_STANDARD_ERRORS = 4.0
SLOPE_TOLERANCE = 0.05


@claim(
    "transformer-math.dot-product-variance",
    where="§1.2.3",
    statement="for q, k with i.i.d. N(0,1) entries Var(q.k) grows like d, and dividing by sqrt(d) keeps it near 1",
    paper_value="dot products grow with d; 1/sqrt(d_k) rescales them",
    anchor="transformer-math.dot-products-grow",
    falsifier="Var(q.k)/d more than 4 standard errors from 1 at some d, or a log-log slope of Var(q.k) against d "
              "outside 1 +- 0.05 (dot products that do not grow like d)",
)
def _dot_product_variance(seed: int) -> Check:
    """max_d |Var(q.k)/d - 1| over d in DIMS, against 4 relative standard errors.

    The relative standard error of a variance estimated from N samples of q.k is
    sqrt((2 + 6/d)/N) (see attnlab.analysis.logit_scaling); at d = 16 and
    N = 16384 that is 0.012, so the tolerance is 4 x 0.012 = 0.048. The fitted
    log-log slope of Var(q.k) against d must be 1 within SLOPE_TOLERANCE (its own
    standard error here is ~0.006); a slope outside it makes the measured value NaN
    (a fail: Var/d near 1 at every d implies it). Var(q.k/sqrt(d)) = Var(q.k)/d, so the same
    number says that 1/sqrt(d) keeps the variance near 1.
    """
    g = torch.Generator().manual_seed(seed)
    r = dot_product_variance(list(DIMS), N_SAMPLES, generator=g)
    deviation = max(abs(v - 1.0) for v in r["var_scaled"])
    tolerance = N_STANDARD_ERRORS * max(r["rel_se"])
    slope = loglog_slope(r["dims"], r["var_raw"])
    slope_ok = abs(slope - 1.0) <= SLOPE_TOLERANCE
    detail = (
        f"Var(q.k)/d at d = {', '.join(map(str, DIMS))}: "
        + ", ".join(f"{v:.4f}" for v in r["var_scaled"])
        + f" (N = {N_SAMPLES}, tolerance = {N_STANDARD_ERRORS:g} standard errors); "
        f"log-log slope of Var vs d = {slope:.4f} (1 +- {SLOPE_TOLERANCE})"
        + ("" if slope_ok else " OUT OF TOLERANCE")
    )
    values = {"dims": list(r["dims"]), "var_scaled": list(r["var_scaled"]), "var_raw": list(r["var_raw"]),
              "rel_se": list(r["rel_se"]), "n_samples": N_SAMPLES, "n_standard_errors": N_STANDARD_ERRORS,
              "slope": slope, "slope_tolerance": SLOPE_TOLERANCE, "slope_ok": slope_ok}
    return at_most(deviation if slope_ok else float("nan"), tolerance, detail, values)
