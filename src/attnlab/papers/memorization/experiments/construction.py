"""memorization.construction: Theorem 1's weights built and checked at the paper's sizes.

memorization-capacity-of-mha §4 (Theorem 1, Proposition 1; proof in Appendix B).
With d = 64, n = 32, d_h = 64 (r = min(n, d_h) = 32) and T = H (r - 1) + 1 examples
drawn as in §5.2 (tokens and queries iid U(0, 1)^d, labels N(0, 1)), for every H of
the grid :func:`attnlab.papers.memorization.construction.build_memorizing_weights` builds W_Q, W_K, W_V,
W_O, W_D in float64, with a shared context (Proposition 2's setting, §5.2) and with
one context per example (Appendix I.1's setting). Measured per build:

- rank Z (eq. (7)) against T, with its tolerance sigma_max max(T, Hd) eps, and
  sigma_min(Z): Proposition 1 says rank Z >= min(H (r - 1) + 1, T) = T;
- c, the largest saturation scale used, beside App. B.2's sufficient c_required;
- max_t |y_hat^(t) - y^(t)| with the model's forward (eqs. (1)-(6), torch float64) and
  with the independent head-by-head NumPy forward
  (:func:`attnlab.papers.memorization.model.numpy_forward`): the target is 1e-8;
- classification (100 classes, labels memorized as one-hot rows, argmax right) and
  d_out > 1 at one H.

The rows of real labels realise Theorem 1 where its hypotheses hold (n < d, U(0, 1) tokens:
Assumptions 1 and 2 almost surely, T = H (r - 1) + 1): role construction anchored to the
ledger entry ``theorem-1`` (reproduced, or fail: a miss is attnlab's bug). The classification
row memorizes classes through attnlab's class codes, which the text does not state: a sanity
check of that code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from attnlab.config import RunConfig, check_int, check_ints, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, total
from attnlab.papers.memorization.construction import (
    build_estimate,
    build_memorizing_weights,
    check_memorization,
    class_logits,
)
from attnlab.papers.memorization.data import draw_dataset
from attnlab.papers.memorization.model import numpy_forward, theorem1_bound
from attnlab.registry import Experiment, register_experiment
from attnlab.checks import Check, at_most
from attnlab.results import PALETTE, ExperimentResult, LineFigure, Table, line_figure, series
from attnlab.runs.rundir import log_metric
from attnlab.stored import Stored

EXPERIMENT_ID = "memorization.construction"
THEOREM1 = "memorization.theorem-1"
FALSIFIER = "the weights of Theorem 1's proof leave max |y_hat - y| > 1e-8 (or rank Z < T) on T = H(r-1)+1 examples"
ERROR_TARGET = 1e-8  # the bar for real labels: max |y_hat - y| over the data set


@dataclass(frozen=True)
class ConstructionConfig(RunConfig):
    """Theorem 1's weights built at T = H(r-1)+1 for every H of two grids. More classes than d
    are memorized as the sign codes +-s_i of :func:`attnlab.papers.memorization.construction.build_memorizing_weights`."""

    PRESETS = {
        "quick": {"H_shared": (1, 2, 4, 8, 12, 16, 20), "H_per_example": (1, 4, 8), "H_labels": 4},
        "paper": {"H_shared": (1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24),
                  "H_per_example": (1, 2, 4, 8, 12, 16, 20), "H_labels": 8},
    }

    d: int = param(64, "token dimension d (paper: 64)")
    n: int = param(32, "context size n < d (paper: 32)")
    d_h: int = param(64, "head size d_h (paper: 64)")
    H_shared: tuple[int, ...] | None = param(None, "head counts built with one context shared by all examples")
    H_per_example: tuple[int, ...] | None = param(None, "head counts built with one context per example")
    H_labels: int | None = param(None, "H of the classification and d_out = 4 builds")
    n_classes: int = param(100, "classes of the classification build (§5.2: 100), in 2..2d")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        v = super().normal_form(values)
        for name in ("H_shared", "H_per_example"):
            v[name] = tuple(sorted(set(check_ints(name, v[name], minimum=1))))
        return v

    def validate(self) -> None:
        for name in ("d", "n", "d_h", "H_labels", "n_classes"):
            check_int(name, getattr(self, name), 1)
        if self.n >= self.d:
            raise ConfigError(f"Theorem 1 needs n < d, got n = {self.n}, d = {self.d}: lower n or raise d")
        if not 2 <= self.n_classes <= 2 * self.d:
            raise ConfigError(f"n_classes must lie in 2..2d = {2 * self.d} (class codes +-s_i), got {self.n_classes}")

    def estimate(self) -> Estimate:
        """The builds one after another (:func:`build_estimate` of each): the largest peak,
        the work summed; a grid value too large to build names its grid."""
        parts = []
        for grid, shared, d_out in (("H_shared", True, 1), ("H_per_example", False, 1),
                                    ("H_labels", True, max(4, -(-self.n_classes // 2)))):
            for H in (getattr(self, grid),) if grid == "H_labels" else getattr(self, grid):
                e = build_estimate(theorem1_bound(H, self.n, self.d_h), self.n, self.d, self.d_h, d_out, H,
                                   shared=shared)
                parts.append(replace(e, what=f"{e.what} at {grid} {H}", lower=(grid,)))
        return total(parts)


@dataclass(frozen=True)
class ConstructionBuild(Stored):
    """Theorem 1's weights built on one data set of T = H(r-1)+1 examples, and what they do on it."""

    H: int  # heads
    T: int  # examples, H (min(n, d_h) - 1) + 1
    context: str  # "shared" (one context E for all T examples) or "per-example" (one E^(t) each)
    d_out: int  # output width: 1 or 4 (real labels), or the class-code width (classes)
    labels: str  # "real" (y ~ N(0, 1)) or "classes" (argmax of the class codes)
    rank_Z: int  # numerical rank of Z (eq. (7)), T x H r
    rank_tol: float  # its tolerance sigma_max(Z) max(T, H d) eps
    sigma_min_Z: float  # smallest singular value of Z
    c: float  # largest saturation scale c used over the heads
    c_required: float  # largest sufficient c of App. B.2 over the heads
    max_abs_error: float  # max_t |y_hat^(t) - y^(t)|, the model's forward (torch, float64)
    numpy_max_abs_error: float  # the same with the head-by-head NumPy forward
    accuracy: float | None  # argmax accuracy (classes), None for real labels
    bound_name: str  # which bound sets T ("Theorem 1")
    seconds: float  # wall seconds of the build


def build_one(cfg: ConstructionConfig, H: int, *, shared: bool, d_out: int = 1,
              n_classes: int | None = None) -> ConstructionBuild:
    """Build and check Theorem 1's weights at T = H(r-1)+1; -> one row of measurements."""
    T = theorem1_bound(H, cfg.n, cfg.d_h)
    seed = int(np.random.SeedSequence([cfg.seed, H, int(shared), d_out, n_classes or 0]).generate_state(1)[0])
    E, e, y = draw_dataset(T, cfg.n, cfg.d, d_out, shared=shared, seed=seed)
    if n_classes is not None:
        y = np.random.default_rng(seed).integers(0, n_classes, T)
    start = time.perf_counter()
    w = build_memorizing_weights(E, e, y, H=H, d_h=cfg.d_h, seed=seed, n_classes=n_classes)
    seconds = time.perf_counter() - start
    out = check_memorization(w, E, e, y)
    target = class_logits(w, y) if n_classes is not None else y
    numpy_error = float(np.abs(numpy_forward(E, e, **w.matrices()) - target).max())
    return ConstructionBuild(H=H, T=T, context="shared" if shared else "per-example", d_out=target.shape[1],
                 labels="classes" if n_classes is not None else "real", rank_Z=out["rank_Z"],
                 rank_tol=out["rank_tol"], sigma_min_Z=out["sigma_min_Z"], c=out["c"],
                 c_required=float(w.c_required_.max(initial=0.0)), max_abs_error=out["max_abs_error"],
                 numpy_max_abs_error=numpy_error, accuracy=out.get("accuracy"),
                 bound_name=w.bound_name, seconds=seconds)


def run(cfg: ConstructionConfig, run_dir=None) -> ExperimentResult:
    rows = []
    plan = [(H, True, {}) for H in cfg.H_shared] + [(H, False, {}) for H in cfg.H_per_example]
    plan += [(cfg.H_labels, True, {"n_classes": cfg.n_classes}), (cfg.H_labels, True, {"d_out": 4})]
    for H, shared, extra in plan:
        row = build_one(cfg, H, shared=shared, **extra)
        rows.append(row)
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, **row.to_dict()})
    return ExperimentResult(summary=_summary(cfg, rows), tables=[_table(rows)],
                            figures=_figures(cfg, rows),
                            notes=_notes(cfg), data={"builds": [r.to_dict() for r in rows]},
                            # Theorem 1 states weights for every size and data set satisfying Assumptions 1-2;
                            # the builds are the proof's weights on such data: nothing departs from the text
                            deviations=[])


def _error(row: ConstructionBuild) -> float:
    """The build's error as one number: max |y_hat - y| of the model and of the NumPy forward, or
    inf where rank Z < T or (classes) an argmax misses, so that the construction check fails."""
    ok = row.rank_Z == row.T and (row.accuracy is None or row.accuracy == 1.0)
    return max(row.max_abs_error, row.numpy_max_abs_error) if ok else float("inf")


def _anchor(rows: list[ConstructionBuild]) -> dict:
    """Anchored to Theorem 1 where every build is under its hypotheses (its bound set T), else a sanity row."""
    return dict(anchor=THEOREM1, falsifier=FALSIFIER) if all(r.bound_name == "Theorem 1" for r in rows) else {}


def _summary(cfg: ConstructionConfig, rows: list[ConstructionBuild]) -> list[Check]:
    """Theorem 1's weights must memorize: role "construction" (a miss is attnlab's bug), anchored to
    Theorem 1 for real labels; the class codes are attnlab's, a sanity row."""
    out = []
    where = "§4, Theorem 1 (proof: §4.1, App. B)"
    for kind in ("shared", "per-example"):
        sel = [r for r in rows if r.context == kind and r.labels == "real" and r.d_out == 1]
        if not sel:
            continue
        out.append(at_most(
            max(_error(r) for r in sel), ERROR_TARGET,
            f"rank Z = T in every build: {all(r.rank_Z == r.T for r in sel)}; smallest sigma_min(Z) "
            f"{min(r.sigma_min_Z for r in sel):.2e}; largest c {max(r.c for r in sel):.3g}",
            {"H": [r.H for r in sel], "max_abs_error": [max(r.max_abs_error, r.numpy_max_abs_error)
                                                           for r in sel]},
            quantity=f"Theorem 1 weights, {kind} context: max |y_hat - y| over H = "
                     f"{', '.join(str(r.H) for r in sel)} (T = H(r-1)+1, d={cfg.d}, n={cfg.n}, d_h={cfg.d_h})",
            role="construction", paper_value="exact (Theorem 1)", where=where, **_anchor(sel)))
    for r in rows:
        if r.labels == "classes" or r.d_out > 1:
            what = f"{cfg.n_classes} classes (argmax)" if r.labels == "classes" else f"d_out = {r.d_out} real labels"
            classes = r.labels == "classes"  # attnlab's class codes: not a statement of the text
            out.append(at_most(_error(r), ERROR_TARGET, f"accuracy {r.accuracy}; rank Z {r.rank_Z} of T={r.T}"
                               if r.accuracy is not None else f"rank Z {r.rank_Z} of T={r.T}",
                               quantity=f"Theorem 1 weights, {what}, H={r.H}, T={r.T}: max |y_hat - y|",
                               role="construction", paper_value=None if classes else "exact", where=where,
                               **({} if classes else _anchor([r]))))
    return out


def _table(rows: list[ConstructionBuild]) -> Table:
    body = [[r.H, r.T, r.context, r.labels if r.d_out == 1 or r.labels == "classes"
             else f"real, d_out={r.d_out}", r.rank_Z, r.rank_tol, r.sigma_min_Z, r.c,
             r.c_required, r.max_abs_error, r.numpy_max_abs_error, r.seconds] for r in rows]
    return Table("Theorem 1's construction (float64): rank, conditioning, saturation scale, error",
                 ["H", "T", "context", "labels", "rank Z", "rank tol", "sigma_min(Z)", "c used",
                  "c App. B.2", "max error (model)", "max error (NumPy)", "build s"],
                 body, ["int", "int", "text", "text", "int", "sci", "sci", "sci", "sci", "sci", "sci", "float"])


def _figures(cfg: ConstructionConfig, rows: list[ConstructionBuild]) -> list[LineFigure]:
    lines_err, lines_cond = [], []
    for i, kind in enumerate(("shared", "per-example")):
        sel = [r for r in rows if r.context == kind and r.labels == "real" and r.d_out == 1]
        if not sel:
            continue
        H = [r.H for r in sel]
        lines_err.append(series(f"{kind} context", H, [max(r.max_abs_error, r.numpy_max_abs_error)
                                                      for r in sel], color=PALETTE[i]))
        lines_cond.append(series(f"sigma_min(Z), {kind}", H, [r.sigma_min_Z for r in sel], color=PALETTE[i]))
        lines_cond.append(series(f"c used, {kind}", H, [max(r.c, 1e-300) for r in sel], style="dashed",
                                 color=PALETTE[i]))
    H_all = sorted({r.H for r in rows})
    lines_err.append(series(f"target {ERROR_TARGET:g}", H_all, [ERROR_TARGET] * len(H_all), style="dotted",
                            marker=False, color=PALETTE[3]))
    return [
        line_figure("memorization-construction-error.png",
                    f"Max |y_hat - y| of Theorem 1's weights over T = H(r-1)+1 real labels (the larger of the "
                    f"model's and an independent NumPy forward), d={cfg.d}, n={cfg.n}, d_h={cfg.d_h}.",
                    series=lines_err, xlabel="heads H", ylabel="max abs error", yscale="log",
                    title="Theorem 1 construction: error"),
        line_figure("memorization-construction-conditioning.png",
                    "Smallest singular value of Z (eq. (7)) and the largest saturation scale c used, per H.",
                    series=lines_cond, xlabel="heads H", ylabel="value", yscale="log",
                    title="Theorem 1 construction: conditioning"),
    ]


def _notes(cfg: ConstructionConfig) -> list[str]:
    return [
        "Per head, App. B.2's sufficient condition gives c_required; the build uses the smallest "
        "c_required 10^-k for which B.2's conclusion itself, sigma_min(Z''_b - C Z''_a(c)) >= "
        "sigma_min(M_+)/2, is measured to hold. That is the same Weyl step the proof bounds, so every "
        "such c is a valid witness; the bound is loose by orders of magnitude, and a smaller c keeps the "
        "logits small (their rounding is what limits the error).",
        "Step 2 solves Z W_V = [y | 0] with minimum norm and refines W_V against the forward pass "
        "(iterative refinement): without it the error at H = 20, shared context, was about 1e-7.",
        "With one context per example the scan often reaches c ~ 1e-6 (no saturation at all): generic "
        "contexts already make the fresh block full rank, so the check accepts it.",
        "Typos of the proof implemented as the mathematics requires (Claim 2's R^c, Lemma 3's index, App. B.2's "
        "example index) are records of the table 'Errors in the text' (attnlab.papers.memorization.errata).",
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "Theorem 1's weights at d=64, n=32 for H up to 20: rank Z, sigma_min, c and label error",
                    ConstructionConfig, run, anchors=(THEOREM1,),
                    cpu_only="Theorem 1's construction is float64 linear algebra in NumPy"))
