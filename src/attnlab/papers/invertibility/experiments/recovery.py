"""invertibility.recovery: decoding the sequence t from its row A(t), without and with noise.

Theorem 1 makes t -> A(t) injective (indeed A invertible). How much noise does that survive?
For each (N, L, d) and scale w (explicit embeddings, W_QK^p = w p E_11, P = ceil(N^L / d)),
every row A(t) gets noise n with ||n|| = level ||A(t)|| in a uniformly random direction
(:func:`attnlab.papers.invertibility.decoding.noisy_rows`), ``draws`` times per level, and is
decoded by the nearest row and by least squares (argmax of c = argmin ||A^T c - y||); the
error rate is the share of wrong sequences.

Compared with the two guarantees (:mod:`attnlab.papers.invertibility.decoding`):

    nearest row:    right when level < delta_t / (2 ||A(t)||),  delta_t = min_{s != t} ||A(s) - A(t)||
    least squares:  right when level < sigma_min / (2 ||A(t)||)

reported as relative levels: sep = min_t delta_t / (2 ||A(t)||) and sig = sigma_min / (2 max_t ||A(t)||)
(sigma_min from float64 where resolved, else in high precision). The measured level at which
half the sequences are lost (log-linear interpolation) is set beside them: a random
direction moves y by only ~||n|| / sqrt(Pd) along A(s) - A(t), so the nearest row typically
survives noise ~sqrt(Pd) times its guarantee, and least squares fails near sigma_min.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlab.checks import Check, at_least, at_most, info
from attnlab.config import RunConfig, check_int, check_number, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, matmul_flops, svd_flops, total
from attnlab.papers.invertibility.cases import minimal_theorem_heads, parse_cases
from attnlab.papers.invertibility.construction import BASE_BYTES, InvertibilityParams, build_case
from attnlab.papers.invertibility.construction import estimate as construction_estimate
from attnlab.papers.invertibility.cost import EXPLICIT_OPS, SETUP, high_precision_estimate
from attnlab.papers.invertibility.decoding import (
    NOISE_TRAFFIC,
    crossing_level,
    error_rates,
    nearest_estimate,
    row_separation,
)
from attnlab.papers.invertibility.experiments._common import CPU_ONLY
from attnlab.papers.invertibility.spectrum import float_spectrum, sigma_min_high_precision
from attnlab.registry import Experiment, register_experiment
from attnlab.results import PALETTE, ExperimentResult, Figure, Table, line_figure, series
from attnlab.runs.rundir import log_metric

EXPERIMENT_ID = "invertibility.recovery"
HUGE = 10.0  # a relative noise level that drowns every row
PINV_SVDS = 3  # pinv's SVD with the thin U and V (LAPACK's divide and conquer) against one without: 2.6x at 1024


@dataclass(frozen=True)
class RecoveryConfig(RunConfig):
    PRESETS = {"quick": {"cases": ("2:4:4", "3:3:4", "2:6:6"), "w_values": (0.1, 1.0),
                         "levels": tuple(10.0 ** k for k in range(-14, 1)) + (HUGE,), "draws": 4, "hp_max_rows": 64},
               "paper": {"cases": ("2:4:4", "3:3:4", "2:6:6", "4:3:5", "3:4:5", "2:8:8", "4:4:6", "2:10:10"),
                         "w_values": (0.1, 0.3, 1.0),
                         "levels": tuple(10.0 ** (k / 2) for k in range(-30, 1)) + (HUGE,), "draws": 4,
                         "hp_max_rows": 256}}

    cases: tuple[str, ...] | None = param(None, "(N, L, d) cases, written N:L:d (P = ceil(N^L/d))")
    w_values: tuple[float, ...] | None = param(None, "scales w of W_QK^p = w p E_11")
    levels: tuple[float, ...] | None = param(None, "relative noise levels ||n|| / ||A(t)|| (0 is always added)")
    draws: int | None = param(None, "noise draws per sequence and level")
    hp_max_rows: int | None = param(None, "high-precision sigma_min up to this many rows N^L")
    max_rows: int = param(1024, "largest N^L decoded (nearest row costs N^L x N^L x Pd per draw)")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """cases written N:L:d; w_values and levels sorted, distinct (all checked here)."""
        v = super().normal_form(values)
        v["cases"] = tuple(":".join(map(str, c)) for c in parse_cases("cases", v["cases"], 3))
        for name in ("w_values", "levels"):
            v[name] = tuple(sorted({check_number(f"every entry of {name}", x, 0, open_min=True) for x in v[name]}))
        return v

    def validate(self) -> None:
        check_int("max_rows", self.max_rows, minimum=2, maximum=4096)
        for N, L, d in parse_cases("cases", self.cases, 3):
            if N ** L > self.max_rows:
                raise ConfigError(f"cases: {N}:{L}:{d} has N^L = {N ** L} > max_rows = {self.max_rows}; lower N or L "
                                  "or raise max_rows")
        for name in ("w_values", "levels"):
            if not getattr(self, name):
                raise ConfigError(f"{name} must list at least one positive number")
        check_int("draws", self.draws, minimum=1)
        check_int("hp_max_rows", self.hp_max_rows, minimum=0, maximum=1024)

    def estimate(self) -> Estimate:
        """Every (N, L, d) of cases and w of w_values as :func:`measure_recovery` measures it
        (:func:`recovery_estimate`), one after another, and SETUP once:

            peak = max over the cases of recovery_estimate(N, L, d, w)
            work = sum over the cases of their work (each ~ (len(levels) + 1) draws 4 N^2L P d flops)

        lower: cases, then hp_max_rows where the high-precision sigma_min holds the peak."""
        parts = [SETUP] + [recovery_estimate(N, L, d, w, self) for N, L, d in parse_cases("cases", self.cases, 3)
                           for w in self.w_values]
        return total(parts)


def recovery_estimate(N: int, L: int, d: int, w: float, cfg: RecoveryConfig) -> Estimate:
    """Peak memory and work of :func:`measure_recovery`, with T = N^L rows, P = ceil(T / d) heads,
    c = P d columns, m = min(T, c), l = len(levels) + 1 noise levels (0 added), D = draws and
    b = min(T, 512) rows per chunk of the nearest-row search (:func:`nearest_estimate`):

    memory  the largest of
            A:        the construction's estimate (certify=false,
                      :func:`attnlab.papers.invertibility.construction.estimate`):
                      BASE_BYTES + 8 (T L d + P d^2 + max(4 T c, T c + 3 P T L))
            (A^T)^+:  BASE_BYTES + 8 (3 T c + 2 m (T + c))        A, its copy, the result, U and V
            the draws: BASE_BYTES + 8 (6 T c + max(T^2, 3 b T + 2 b 8 c))   A, (A^T)^+, the old
                      and the new noisy rows, the normal draws and a temporary; beside them
                      (A^T)^+ Y^T (T x T, least squares) or a chunk of the nearest-row search
            the high-precision sigma_min (:func:`high_precision_estimate`) where T <= hp_max_rows:
                      counted, though it runs only where float64 does not resolve sigma_min
    gemm    the construction's einsums + (1 + l D) 2 T^2 c    nearest rows: delta_t, then each draw
            + l D 2 T^2 c + 2 T m c                          least squares per draw; (A^T)^+ itself
    lapack  (1 + PINV_SVDS) svd_flops(T, c)                  sigma of A; the SVD with U and V in pinv
    traffic (1 + l D) (NEAREST_TRAFFIC T^2 + 64 T 8 c)       the nearest rows' passes
            + l D (NOISE_TRAFFIC T c + 16 T^2)               the noise, argmax over c^T Y
    python  EXPLICIT_OPS (N + L) d                           the explicit embeddings

    Nearest-row decoding costs N^L x N^L x P d per draw and per level: draws, levels and the
    largest N^L set the time. Measured (one w, levels 1e-8, 1e-2, 10 and 0): (2, 10, 10), 2 draws:
    132 MiB resident against 125 MiB (the peak less BASE_BYTES), 2.8 s against 4.0 s; (2, 9, 9)
    and (2, 8, 8), 1 draw: numpy's allocations peak at 42.3 and 10.6 MiB (tracemalloc) against
    50.1 and 12.5 MiB; (4, 4, 6), w = 1 at the paper's 32 levels and 4 draws, its sigma_min at
    2048 bits included: 44 s against 12 s on a loaded machine."""
    T, P = N ** L, minimal_theorem_heads(N, L, d)
    c, m = P * d, min(T, P * d)
    runs = (len(cfg.levels) + 1) * cfg.draws
    base = construction_estimate(InvertibilityParams(N=N, L=L, d=d, P=P, w=w, certify=False))
    gemm_n, traffic_n, held_n = nearest_estimate(T, T, c)
    draws_bytes = BASE_BYTES + 8 * (6 * T * c + max(T * T, held_n / 8))
    pinv_bytes = BASE_BYTES + 8 * (3 * T * c + 2 * m * (T + c))
    peak = max(base.peak_bytes, draws_bytes, pinv_bytes)
    what = (base.what if peak == base.peak_bytes else
            f"(A^T)^+ of A ({T} x {c}) by its SVD" if peak == pinv_bytes else
            f"A ({T} x {c}), (A^T)^+ and {T} noisy rows, decoded by nearest row and least squares")
    where = f"case ({N}, {L}, {d}), w = {w:g}"
    e = Estimate(peak, f"{where}: {what}",
                 gemm=base.gemm + (1 + runs) * gemm_n + runs * matmul_flops(T, c, T) + matmul_flops(T, m, c),
                 lapack=(1 + PINV_SVDS) * svd_flops(T, c),
                 traffic=(1 + runs) * traffic_n + runs * (NOISE_TRAFFIC * T * c + 16.0 * T * T),
                 python=EXPLICIT_OPS * (N + L) * d, calls=8 + 4 * runs, lower=("cases",))
    if T > cfg.hp_max_rows:
        return e
    hp = high_precision_estimate(N, L, d, P, w)
    return total([e, dataclasses.replace(hp, what=f"{where}: {hp.what}", lower=("hp_max_rows", "cases"))])


@dataclass(frozen=True)
class RecoveryCase:
    """One (N, L, d) and w decoded from noisy rows by :func:`measure_recovery`. Noise levels are
    relative, ||n|| / ||A(t)||; error rates are shares of wrongly decoded sequences; logarithms are
    base 10 of singular values of A. None means "not computed" unless the entry says otherwise.

    Attributes:
        N, L, d, P, w: the case (P = ceil(N^L / d), W_QK^p = w p E_11).
        rows: N^L; cols: P d.
        levels: the relative noise levels, 0 first, then the config's.
        nearest, least_squares: the error rate of each decoder at each level.
        float_resolved: whether float64 resolves sigma_min / sigma_max (above max(N^L, Pd) eps).
        float_log10_ratio: log10 sigma_min / sigma_max from float64's SVD (round-off when not resolved).
        log10_sigma_min: log10 sigma_min, float64's where resolved, else the high-precision one;
            None where neither (N^L > hp_max_rows, or not resolved at ``hp_bits``).
        log10_sigma_max: log10 sigma_max (float64).
        hp_bits: the precision in bits of the high-precision sigma_min; None when not computed.
        sep_guarantee: min_t delta_t / (2 ||A(t)||), the nearest row's guaranteed level.
        median_sep: median_t delta_t / (2 ||A(t)||).
        sigma_guarantee: sigma_min / (2 max_t ||A(t)||), least squares' guaranteed level; None
            without sigma_min.
        cross_nearest, cross_least_squares: the level at which each decoder's error rate first
            reaches 1/2 (log-linear interpolation); None when it never does.
        onset_nearest, onset_least_squares: the first level with a nonzero error rate; None when
            there is none.
    """

    N: int
    L: int
    d: int
    P: int
    w: float
    rows: int
    cols: int
    levels: list[float]
    nearest: list[float]
    least_squares: list[float]
    float_resolved: bool
    float_log10_ratio: float
    log10_sigma_min: float | None
    log10_sigma_max: float
    hp_bits: int | None
    sep_guarantee: float
    median_sep: float
    sigma_guarantee: float | None
    cross_nearest: float | None
    cross_least_squares: float | None
    onset_nearest: float | None
    onset_least_squares: float | None

    def to_dict(self) -> dict[str, Any]:
        """The stored form (results.json): every field by name, in declaration order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def measure_recovery(N: int, L: int, d: int, w: float, cfg: RecoveryConfig, rng: np.random.Generator) -> RecoveryCase:
    """A of (N, L, d) at scale w, its sigma_min and row separation, and both decoders' error rates
    at every noise level (module docstring)."""
    P = minimal_theorem_heads(N, L, d)
    case = build_case(InvertibilityParams(N=N, L=L, d=d, P=P, w=w, certify=False))
    A = case.A
    fs = float_spectrum(A)
    norms = np.linalg.norm(A, axis=1)
    delta = row_separation(A)
    log10_smin = math.log10(fs.sigma[-1]) if fs.resolved() else None
    hp_bits = None
    if log10_smin is None and N ** L <= cfg.hp_max_rows:
        hp = sigma_min_high_precision(case.arb_matrix)
        log10_smin, hp_bits = hp.log10_sigma_min, hp.bits
    levels = [0.0, *cfg.levels]
    rates = error_rates(A, levels, cfg.draws, rng)
    sep = float((delta / (2 * norms)).min())
    sig = None if log10_smin is None else 10 ** log10_smin / (2 * float(norms.max()))
    return RecoveryCase(
        N=N, L=L, d=d, P=P, w=w, rows=N ** L, cols=P * d, levels=levels, nearest=rates["nearest"],
        least_squares=rates["least_squares"], float_resolved=fs.resolved(), float_log10_ratio=fs.log10_ratio(),
        log10_sigma_min=log10_smin, log10_sigma_max=math.log10(fs.sigma[0]), hp_bits=hp_bits,
        sep_guarantee=sep, median_sep=float(np.median(delta / (2 * norms))), sigma_guarantee=sig,
        cross_nearest=crossing_level(levels, rates["nearest"]),
        cross_least_squares=crossing_level(levels, rates["least_squares"]),
        onset_nearest=next((lv for lv, r in zip(levels, rates["nearest"]) if r > 0), None),
        onset_least_squares=next((lv for lv, r in zip(levels, rates["least_squares"]) if r > 0), None))


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2g}"


def run(cfg: RecoveryConfig, run_dir=None) -> ExperimentResult:
    rows = measure(cfg, run_dir)
    return ExperimentResult(summary=_summary(cfg, rows), tables=_tables(rows), figures=_figures(cfg, rows),
                            notes=list(NOTES), data={"rows": [r.to_dict() for r in rows]})


def measure(cfg: RecoveryConfig, run_dir=None) -> list[RecoveryCase]:
    """Every case (N, L, d) at every scale w, in the order of cfg.cases and cfg.w_values."""
    rng = np.random.default_rng(cfg.seed)
    rows = []
    for N, L, d in parse_cases("cases", cfg.cases, 3):
        for w in cfg.w_values:
            r = measure_recovery(N, L, d, w, cfg, rng)
            rows.append(r)
            log_metric(run_dir, {"experiment": EXPERIMENT_ID, "N": N, "L": L, "d": d, "w": w,
                                 "cross_nearest": r.cross_nearest, "cross_least_squares": r.cross_least_squares})
    return rows


def _summary(cfg: RecoveryConfig, rows: list[RecoveryCase]) -> list[Check]:
    """Zero-noise decoding, the two guarantees, chance at overwhelming noise, and where each decoder breaks."""
    big = max(cfg.levels)
    resolved = [r for r in rows if r.float_resolved]
    below_sep = [r for r in rows if any(lv < r.sep_guarantee and e > 0 for lv, e in zip(r.levels, r.nearest))]
    below_sig = [r for r in resolved if any(lv < r.sigma_guarantee and e > 0
                                            for lv, e in zip(r.levels, r.least_squares))]
    huge = [min(r.nearest[-1], r.least_squares[-1]) for r in rows]
    chance = [1 - 1 / r.rows for r in rows]
    ratio_nn = [r.cross_nearest / r.median_sep for r in rows if r.cross_nearest and r.median_sep > 0]
    ratio_ls = [r.cross_least_squares / r.sigma_guarantee for r in resolved
                if r.cross_least_squares and r.sigma_guarantee]
    ratios = [h / c for h, c in zip(huge, chance)]
    summary = [
        # t is recoverable because A is injective (Theorem 1); decoding a noiseless row is a consistency check
        at_most(max(r.nearest[0] for r in rows), 0, f"every row decodes to itself, {len(rows)} cases",
                quantity="nearest-row error rate at zero noise (max over cases)", role="sanity",
                where="Theorem 1 (A injective)"),
        at_most(max((r.least_squares[0] for r in resolved), default=0), 0,
                f"{len(resolved)} cases with sigma_min resolved in float64; lstsq with rcond max(N^L,Pd) eps; "
                "unresolved cases: " + (", ".join(f"({r.N},{r.L},{r.d}) w={r.w:g}: "
                                                  f"{r.least_squares[0]:.2f}" for r in rows
                                                  if not r.float_resolved) or "none"),
                quantity="least-squares error rate at zero noise, sigma_min resolved in float64 (max over cases)",
                role="sanity", where="Theorem 1 (A invertible)"),
        at_most(len(below_sep), 0, "triangle inequality: below min_t delta_t / (2 ||A(t)||) the nearest row is right",
                quantity="cases with a nearest-row error below the guarantee min_t delta_t / (2 ||A(t)||)",
                role="sanity"),
        at_most(len(below_sig), 0, "||(A^T)^+ n||_inf <= ||n|| / sigma_min: below the guarantee least squares is right",
                quantity="cases with a least-squares error below the guarantee sigma_min / (2 max ||A(t)||)",
                role="sanity"),
        at_least(min(ratios), 0.9, f"both decoders; min error rate {min(huge):.3f}, chance level 1 - 1/N^L >= "
                                   f"{min(chance):.3f}",
                 quantity=f"error rate at relative noise {big:g} / chance level (min over cases)",
                 role="sanity"),  # noise 10 times the row drowns every row: the decoders' check, it cannot fail
        info("nearest row: 50% error level / median_t delta_t / (2 ||A(t)||)",
             f"{min(ratio_nn):.2g} .. {max(ratio_nn):.2g}" if ratio_nn else "-",
             detail="a random direction moves y by ~||n||/sqrt(Pd) along A(s) - A(t): expect ~sqrt(Pd) (here "
                    + ", ".join(f"{math.sqrt(r.cols):.1f}" for r in rows[::len(cfg.w_values)]) + ")"),
        info("least squares: 50% error level / (sigma_min / (2 max ||A(t)||))",
             f"{min(ratio_ls):.2g} .. {max(ratio_ls):.2g}" if ratio_ls else "-",
             detail="least squares fails once the noise is about sigma_min (relative)"),
    ]
    return summary


def _tables(rows: list[RecoveryCase]) -> list[Table]:
    """The guarantees and measured levels per case; the error rates by noise level."""
    table = Table(
        "Recovery of t from A(t) + noise: guarantees and measured levels (relative noise ||n|| / ||A(t)||)",
        ["N", "L", "d", "P", "w", "N^L", "log10 sigma_min/sigma_max", "min delta_t/(2|A(t)|)",
         "median delta_t/(2|A(t)|)", "sigma_min/(2 max|A(t)|)", "nearest: first error", "nearest: 50%",
         "least squares: first error", "least squares: 50%", "error rate at 0 (nearest / lstsq)"],
        [[r.N, r.L, r.d, r.P, r.w, r.rows,
          f"{r.float_log10_ratio:.2f}" if r.float_resolved else
          (f"{r.log10_sigma_min - r.log10_sigma_max:.2f} ({r.hp_bits} bits)"
           if r.log10_sigma_min is not None else "below float resolution"),
          _fmt(r.sep_guarantee), _fmt(r.median_sep), _fmt(r.sigma_guarantee), _fmt(r.onset_nearest),
          _fmt(r.cross_nearest), _fmt(r.onset_least_squares), _fmt(r.cross_least_squares),
          f"{r.nearest[0]:g} / {r.least_squares[0]:g}"] for r in rows],
        ["int"] * 4 + ["float", "int"] + ["text"] * 9)
    # one row per noise level, one column per case: the rates read down as the noise grows
    rate_rows = Table("Error rate by relative noise level, nearest row / least squares (one column per case)",
                      ["relative noise", *[f"({r.N},{r.L},{r.d}) w={r.w:g}" for r in rows]],
                      [[f"{lv:.0e}" if lv else "0",
                        *[f"{r.nearest[i]:.2f} / {r.least_squares[i]:.2f}" for r in rows]]
                       for i, lv in enumerate(rows[0].levels)],
                      ["text"] * (1 + len(rows)))
    return [table, rate_rows]


def _figures(cfg: RecoveryConfig, rows: list[RecoveryCase]) -> list[Figure]:
    """Error rate against noise per case; the measured 50% levels beside the two guarantees."""
    ser = []
    for i, r in enumerate(rows):
        c = PALETTE[i % len(PALETTE)]
        lab = f"({r.N},{r.L},{r.d}) w={r.w:g}"
        ser.append(series(f"{lab} nearest", r.levels[1:], r.nearest[1:], color=c))
        ser.append(series(f"{lab} least squares", r.levels[1:], r.least_squares[1:], style="dashed", color=c))
    figs = [line_figure(
        "inv-recovery-error-vs-noise.png",
        "Share of sequences t decoded wrongly from A(t) + n, ||n|| = level ||A(t)|| in a random direction "
        f"({cfg.draws} draws per sequence), by the nearest row (solid) and least squares (dashed); explicit "
        "embeddings, W_QK^p = w p E_11, P = ceil(N^L/d).",
        series=ser, xlabel="relative noise ||n|| / ||A(t)||", ylabel="error rate", xscale="log",
        title="Recovering t from a noisy A(t)")]
    idx = list(range(len(rows)))
    labels = [f"({r.N},{r.L},{r.d}) w={r.w:g}" for r in rows]
    figs.append(line_figure(
        "inv-recovery-thresholds.png",
        "Per case (N, L, d) and scale w, in the order of the table, log10 of: the measured 50% error level of the nearest row and of least squares, beside the median "
        "row separation delta_t / (2 ||A(t)||) and sigma_min / (2 max ||A(t)||). Least squares breaks at about "
        "sigma_min; the nearest row lasts to about sqrt(Pd) times the row separation, orders of magnitude later.",
        series=[series("nearest: 50% level", idx, [_log(r.cross_nearest) for r in rows], color=PALETTE[0]),
                series("median delta_t / (2|A(t)|)", idx, [_log(r.median_sep) for r in rows], style="dashed",
                       color=PALETTE[0]),
                series("least squares: 50% level", idx, [_log(r.cross_least_squares) for r in rows],
                       color=PALETTE[1]),
                series("sigma_min / (2 max|A(t)|)", idx, [_log(r.sigma_guarantee) for r in rows], style="dashed",
                       color=PALETTE[1])],
        xlabel="case (N, L, d) and w", ylabel="log10 relative noise",
        title="Decoding thresholds vs separation and sigma_min", xticklabels=labels))
    return figs


NOTES = (
    "Nearest-row decoding needs only that the rows differ (injectivity); least squares needs A of full row rank "
    "and is limited by sigma_min, which float64 cannot see below max(N^L,Pd) eps sigma_max: there least squares "
    "fails even at zero noise while the nearest row still decodes every sequence.",
    "Where sigma_min is below float64's resolution, lstsq (rcond max(N^L,Pd) eps) drops the unresolvable "
    "directions: it still decodes at zero noise, and breaks once the noise reaches about that truncation level "
    "(~1e-12 relative), not at the exact sigma_min (1e-27 relative for (2,6,6) at w = 1).",
    "Noise is relative to each row's norm; rows are convex combinations of the x(t, i), all of norm ~ "
    "sqrt(Pd) x 1.5, so absolute and relative levels differ by that factor only.",
)


def _log(v: float | None) -> float | None:
    return None if not v else math.log10(v)


register_experiment(Experiment(EXPERIMENT_ID,
                    "Decode t from A(t) + noise by nearest row and least squares: error rate vs noise level, "
                    "beside the row separation and sigma_min",
                    RecoveryConfig, run, cpu_only=CPU_ONLY))
