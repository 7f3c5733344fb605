"""invertibility.embedding-kinds: rank and conditioning of A for explicit, random and trained
embeddings, with the proof's W_QK^p = w p E_11 and with Gaussian W_QK^p.

Embeddings (e: N x d, pos: L x d):

- explicit: c_i = 2^(-m_i) exp(sqrt(p_i)) (:mod:`attnlab.papers.invertibility.embeddings`),
  taken here at their float64 values;
- random:   U(0.5, 1.5) entries from the seed;
- trained:  all-MiniLM-L6-v2's token table W_tok restricted to N common words and its
  position table W_pos[0..L-1], projected to d coordinates (``restrict``: "projection" onto
  the top-d right singular vectors of the stacked tables, or the "first" d coordinates) and
  rescaled to RMS entry 1.5 (:mod:`attnlab.papers.invertibility.trained`).

W_QK^p:

- E11:      w p E_11, the proof's matrices (only the (1,1) entry);
- gaussian: w G^p / d with G^p a d x d matrix of N(0, 1) entries from the seed, so that the
  scores x^T W x have the same size as with E11 (|x^T G y| ~ |x| |y| ~ d RMS^2).

For each (N, L, d) at P = ceil(N^L / d) (Pd >= N^L): the float64 rank (tol max(N^L, Pd) eps
sigma_1), log10 sigma_min / sigma_max (float64 where resolved, else in high precision from
the Gram inverse, :mod:`attnlab.papers.invertibility.spectrum`) and the certified rank
(:func:`attnlab.analysis.certified_rank.certified_rank` of the N^L x N^L minor on the columns a
pivoted QR of the float64 A picks, or of a minor of the cap's size where the cap
1 + P (N + L - 2) is below N^L; the float64 values of e, pos and W_QK are taken as exact).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from attnlab.checks import NO_ERROR, Bound, Check, equals, info
from attnlab.config import RunConfig, check_choice, check_int, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, total
from attnlab.papers.invertibility.anchors import CAP, THEOREM_1
from attnlab.papers.invertibility.cases import CaseKey, cases_and_w_normal_form, minimal_theorem_heads, parse_cases
from attnlab.papers.invertibility.cost import SETUP, TRAINED, explicit_embeddings_estimate, matrix_estimate
from attnlab.papers.invertibility.embeddings import KINDS as EMBEDDINGS
from attnlab.papers.invertibility.embeddings import embeddings_of_kind
from attnlab.papers.invertibility.experiments._common import CPU_ONLY, THEOREM1_DEVIATIONS, touched_by
from attnlab.papers.invertibility.matrix import QK_KINDS, qk_of_kind
from attnlab.papers.invertibility.measurement import MatrixSpectrum, measure_matrix
from attnlab.papers.invertibility.trained import RESTRICTIONS, WORDS
from attnlab.registry import Experiment, register_experiment
from attnlab.results import ExperimentResult, Figure, Table, bar_figure
from attnlab.runs.rundir import RunDir, log_metric

EXPERIMENT_ID = "invertibility.embedding-kinds"


@dataclass(frozen=True)
class EmbeddingKindsConfig(RunConfig):
    PRESETS = {"quick": {"cases": ("2:4:4", "3:3:4", "2:6:6"), "w_values": (0.1, 1.0), "hp_max_rows": 64,
                         "certify_max_rows": 64},
               "paper": {"cases": ("2:4:4", "3:3:4", "2:6:6", "4:3:5", "3:4:5", "2:7:7", "2:8:8", "4:4:6"),
                         "w_values": (0.1, 0.3, 1.0, 3.0), "hp_max_rows": 128, "certify_max_rows": 128}}

    cases: tuple[str, ...] | None = param(None, "(N, L, d) cases, written N:L:d (N <= 16 for the trained tables)")
    w_values: tuple[float, ...] | None = param(None, "scales w of W_QK (w p E_11, or w G / d)")
    restrict: str = param("projection", "trained tables to d coordinates: projection (top-d singular directions) "
                                        "or first (the first d coordinates)")
    hp_max_rows: int | None = param(None, "high-precision sigma_min up to this many rows N^L")
    certify_max_rows: int | None = param(None, "certified rank (ball determinant) up to this many rows N^L")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """cases written N:L:d, w_values sorted (both checked here)."""
        return cases_and_w_normal_form(super().normal_form(values))

    def validate(self) -> None:
        for N, L, d in parse_cases("cases", self.cases, 3):
            if N > len(WORDS):
                raise ConfigError(f"cases: N = {N} exceeds the {len(WORDS)} trained token embeddings; use N <= "
                                  f"{len(WORDS)}")
        if not self.w_values:
            raise ConfigError("w_values must list at least one positive scale w")
        check_choice("restrict", self.restrict, RESTRICTIONS)
        check_int("hp_max_rows", self.hp_max_rows, minimum=0, maximum=1024)
        check_int("certify_max_rows", self.certify_max_rows, minimum=0, maximum=1024)

    def estimate(self) -> Estimate:
        """Every run of :func:`runs` as :func:`attnlab.papers.invertibility.measurement.measure_matrix`
        measures it (:func:`attnlab.papers.invertibility.cost.matrix_estimate`), the embeddings of each
        (N, L, d) (explicit: :func:`explicit_embeddings_estimate`) and, once, the trained tables (TRAINED):

            peak = max(TRAINED_BYTES, max over the runs of matrix_estimate(N, L, d, P, w, kind))
            work = sum of their work,  (N, L, d) in cases, P = ceil(N^L / d), 3 embeddings x 2 W_QK
                   kinds x w in w_values runs per case, N^L <= hp_max_rows / certify_max_rows
                   deciding the high-precision sigma_min and the certificate

        The memory grows with N^L P d (A) and P d^2 (W_QK): lower cases, then hp_max_rows or
        certify_max_rows where the largest run's balls hold its peak."""
        parts = [SETUP, TRAINED]
        for N, L, d in parse_cases("cases", self.cases, 3):
            parts.append(explicit_embeddings_estimate(N, L, d))
        for N, L, d, P, emb, kind, w in runs(self):
            T = N ** L
            parts.append(matrix_estimate(N, L, d, P, w, kind, high_precision=T <= self.hp_max_rows,
                                         certify=T <= self.certify_max_rows))
        out = total(parts)
        return dataclasses.replace(out, lower=("cases",) + out.lower)


def runs(cfg: EmbeddingKindsConfig) -> Iterator[tuple[int, int, int, int, str, str, float]]:
    """(N, L, d, P, embedding, W_QK kind, w) of every A :func:`measure` builds, in its order."""
    for N, L, d in parse_cases("cases", cfg.cases, 3):
        for emb in EMBEDDINGS:
            for kind in QK_KINDS:
                for w in cfg.w_values:
                    yield N, L, d, minimal_theorem_heads(N, L, d), emb, kind, w


@dataclass(frozen=True)
class KindCase(MatrixSpectrum, CaseKey):
    """A :class:`attnlab.papers.invertibility.measurement.MatrixSpectrum` with the case that built it: its
    :class:`CaseKey` (P = ceil(N^L / d), w the scale of W_QK) and the kinds.

    Attributes:
        embedding: "explicit", "random" or "trained"; qk: the W_QK kind, "E11" or "gaussian".
    """

    embedding: str
    qk: str

    def to_dict(self) -> dict[str, Any]:
        """The stored form (results.json): the case's fields, then the spectrum's, in declaration order."""
        case = ("N", "L", "d", "P", "embedding", "qk", "w")
        spectrum = [f.name for f in dataclasses.fields(MatrixSpectrum)]
        return {k: getattr(self, k) for k in (*case, *spectrum)}


def measure(cfg: EmbeddingKindsConfig, run_dir: RunDir | None = None) -> list[KindCase]:
    """Every A of :func:`runs`, by :func:`attnlab.papers.invertibility.measurement.measure_matrix` (logged
    to ``run_dir``)."""
    rows = []
    drawn = None
    for N, L, d, P, emb, kind, w in runs(cfg):
        if drawn != (N, L, d, emb):  # one embedding per case and kind, for both W_QK kinds and every w
            drawn = (N, L, d, emb)
            e, pos = embeddings_of_kind(emb, N, L, d, cfg.seed, cfg.restrict)
        W = qk_of_kind(kind, P, d, w, cfg.seed)
        r = measure_matrix(e, pos, W, high_precision=N ** L <= cfg.hp_max_rows,
                           certify=N ** L <= cfg.certify_max_rows)
        rows.append(KindCase(**{f.name: getattr(r, f.name) for f in dataclasses.fields(r)},
                             N=N, L=L, d=d, P=P, embedding=emb, qk=kind, w=w))
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, "N": N, "L": L, "d": d, "embedding": emb,
                             "qk": kind, "w": w, "float_rank": r.float_rank, "log10_ratio": r.log10_ratio})
    return rows


def _ratio(r: KindCase) -> str:
    if r.float_resolved:
        return f"{r.float_log10_ratio:.2f} (float64)"
    if r.hp_log10_ratio is not None:
        return f"{r.hp_log10_ratio:.2f} ({r.hp_bits} bits)"
    return f"below float resolution (< {r.resolution_log10:.1f})"


def _cert(r: KindCase) -> str:
    return "-" if r.cert_lower is None else (f"{r.cert_lower} ({r.cert_bits} bits)" if r.cert_lower
                                                else "not certified up to 4096 bits")


def run(cfg: EmbeddingKindsConfig, run_dir: RunDir | None = None) -> ExperimentResult:
    """Measure every A of :func:`runs` (logged to ``run_dir``), then the summary, table, figures and notes."""
    rows = measure(cfg, run_dir)
    return ExperimentResult(summary=_summary(rows), tables=[_table(rows)], figures=_figures(cfg, rows),
                            deviations=list(THEOREM1_DEVIATIONS),
                            notes=_notes(cfg), data={"rows": [r.to_dict() for r in rows]})


def _summary(rows: list[KindCase]) -> list[Check]:
    """Per embedding and W_QK kind: the cases certified of rank N^L (judged in the proof's setting, counted
    elsewhere); then how often the float64 rank undercounts the certified one."""
    certified = [r for r in rows if r.cert_lower is not None]
    summary = []
    for emb in EMBEDDINGS:
        for kind in QK_KINDS:
            rs = [r for r in certified if r.embedding == emb and r.qk == kind]
            full = sum(r.cert_lower == r.rows for r in rs)
            known = [r.log10_ratio for r in rows if r.embedding == emb and r.qk == kind
                     and r.log10_ratio is not None]
            detail = (f"median log10 sigma_min/sigma_max {np.median(known):.2f} over {len(known)} cases" if known else
                      "no resolved sigma_min")
            name = f"certified rank N^L, {emb} embeddings, W_QK {kind}"
            if emb in ("explicit", "random") and kind == "E11" and rs:
                # the proof's setting: positive embeddings and W_QK^p = w_p E_11; Theorem 1 claims rank N^L.
                # A case whose rank cap is below N^L is decided (rank < N^L for every choice); a certificate
                # that proved less than N^L under a cap of N^L did not decide it: the count is then a bound
                undecided = sum(r.cert_lower < r.rows == r.cap for r in rs)
                measured = Bound(full, full + undecided, f"{undecided} certificate(s) proved less than N^L") \
                    if undecided else full
                # a case below N^L is the cap's error when 1 + P (N+L-2) < N^L stops it; no record names another
                missed = [r for r in rs if r.cert_lower < r.rows]
                erratum = "" if not missed else CAP if all(r.cap < r.rows for r in missed) else NO_ERROR
                summary.append(equals(measured, len(rs), detail, quantity=name + ": cases",
                                      paper_value="A invertible (Theorem 1)", where="Theorem 1", anchor=THEOREM_1,
                                      falsifier="a case with Pd >= N^L whose certified rank is below N^L",
                                      erratum=erratum, deviations=touched_by(any(r.cap == r.rows for r in missed))))
            else:
                why = ("trained embeddings have entries of both signs (property (1) fails)" if emb == "trained" else
                       "Gaussian W_QK is outside the proof's W_QK^p = w_p E_11")
                summary.append(info(name, f"{full} of {len(rs)}", detail=f"{detail}; {why}",
                                    values={"full": full, "cases": len(rs)}))
    wrong = [r for r in certified if r.cert_lower and r.float_rank != r.cert_lower]
    summary.append(info("float64 rank below the certified rank", f"{len(wrong)} of {len(certified)} cases",
                        detail="tol max(N^L, Pd) eps sigma_1; the float rank undercounts where sigma_min/sigma_max "
                               "falls below it"))
    return summary


def _table(rows: list[KindCase]) -> Table:
    """Rank and conditioning of A per case."""
    return Table("Rank and conditioning of A (N^L x Pd, P = ceil(N^L/d)) by embedding and W_QK kind",
                 ["N", "L", "d", "P", "embedding", "W_QK", "w", "N^L", "rank cap", "float64 rank", "float64 tol",
                  "log10 sigma_min/sigma_max", "certified rank (bits)", "seconds"],
                 [[r.N, r.L, r.d, r.P, r.embedding, r.qk, r.w, r.rows, r.cap,
                   r.float_rank, r.float_tol, _ratio(r), _cert(r), r.seconds] for r in rows],
                 ["int"] * 4 + ["text", "text", "float", "int", "int", "int", "float", "text", "text", "float"])


def _figures(cfg: EmbeddingKindsConfig, rows: list[KindCase]) -> list[Figure]:
    """log10 sigma_min/sigma_max per (N, L, d) and kind, one figure per scale w."""
    figs = []
    cats = [f"({r.N},{r.L},{r.d})" for r in rows if r.embedding == "explicit" and r.qk == "E11"
            and r.w == cfg.w_values[0]]
    for w in cfg.w_values:
        groups = []
        for emb in EMBEDDINGS:
            for kind in QK_KINDS:
                groups.append({"label": f"{emb}, {kind}",
                               "values": [r.log10_ratio for r in rows
                                          if r.embedding == emb and r.qk == kind and r.w == w]})
        figs.append(bar_figure(
            f"inv-embeddings-w{w:g}.png",
            f"log10 sigma_min/sigma_max of A at w = {w:g}, P = ceil(N^L/d), by (N, L, d), for explicit, random and "
            f"trained (all-MiniLM-L6-v2, {cfg.restrict} to d coordinates) embeddings and W_QK = w p E_11 or w G / d; "
            "values below float64's resolution come from the Gram inverse in high precision (missing: not "
            "resolved).", categories=cats, groups=groups, ylabel="log10 sigma_min / sigma_max",
            title=f"Embedding and W_QK kinds, w = {w:g}"))
    return figs


def _notes(cfg: EmbeddingKindsConfig) -> list[str]:
    """Where the trained embeddings come from, and what the Gaussian W_QK and the certificates assume."""
    return [
        f"Trained embeddings: all-MiniLM-L6-v2's word-piece rows for {', '.join(WORDS[:4])}, ... (the first N of "
        f"{len(WORDS)} common words) and positions 0..L-1, restricted by {cfg.restrict} "
        "(projection: onto the top-d right singular vectors of the stacked tables) and rescaled to RMS entry 1.5. "
        "They have entries of both signs, so property (1) of the proof fails; property (2) fails for every float.",
        "Gaussian W_QK^p = w G^p / d is outside the proof (which needs W_11 only); it is the generic case.",
        "Certified ranks take the float64 values of e, pos and W_QK as exact; the explicit embeddings are their "
        "float64 roundings here (invertibility.conditioning certifies the exact transcendental values).",
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "Explicit vs random vs trained (MiniLM) embeddings, E_11 vs Gaussian W_QK: rank and "
                    "sigma_min/sigma_max of A",
                    EmbeddingKindsConfig, run, cpu_only=CPU_ONLY, anchors=(THEOREM_1,)))
