"""The figures of rank-collapse.low-rank: MiniLM's attention spectrum, its ranks against n, Theorem 2.3's
error against k', and SmolLM2's energy ranks beside MiniLM's
(rows of :mod:`~attnlab.papers.rank_collapse.attention_spectrum`).
"""

from __future__ import annotations

import math

from attnlab.papers.rank_collapse.attention_spectrum import MiniLMRow, SmolLM2Row
from attnlab.results import PALETTE, Figure, line_figure, series


def spectrum_figure(rows: list[MiniLMRow], texts: int) -> Figure:
    """The mean normalised cumulative spectrum of MiniLM's maps (on ``texts`` texts), one curve per n."""
    return line_figure(
        "lowrank-spectrum.png",
        "Normalised cumulative singular values sum_{i<=k} sigma_i / sum_i sigma_i of all-MiniLM-L6-v2's "
        f"attention matrices (mean over 6 layers x 12 heads x {texts} texts), one curve per n "
        "(Linformer's spectrum figure, here for MiniLM on pydoc text).",
        series=[series(f"n={r.n}", list(range(1, r.n + 1)), r.cumulative, color=PALETTE[i],
                       marker=False) for i, r in enumerate(rows)],
        xlabel="k (singular value index)", ylabel="cumulative share of sum sigma", xscale="log",
        title="Spectrum of real attention matrices")


def ranks_figure(rows: list[MiniLMRow]) -> Figure:
    """MiniLM's median ranks against n, beside c ln n and c (ln n)^2 through the first k_90."""
    first, nn = rows[0], [r.n for r in rows]
    c1 = first.k90 / math.log(nn[0])
    c2 = first.k90 / math.log(nn[0]) ** 2
    return line_figure(
        "lowrank-ranks-vs-n.png",
        "Median over MiniLM's attention matrices of k_90 and k_99 (fewest singular values reaching "
        "90% / 99% of sum sigma), the stable rank and the numerical rank (sigma > n eps sigma_1), "
        "against n; dashed: c ln n and c (ln n)^2 through the first k_90 point (the notes' "
        "'Theta(log n)' and 'Theta(log n log n)').",
        series=[series("k_90", nn, [r.k90 for r in rows], color=PALETTE[0]),
                series("k_99", nn, [r.k99 for r in rows], color=PALETTE[1]),
                series("stable rank", nn, [r.stable_rank for r in rows], color=PALETTE[2]),
                series("numerical rank", nn, [r.numerical_rank for r in rows], color=PALETTE[3]),
                series("c ln n", nn, [c1 * math.log(n) for n in nn], style="dashed", marker=False,
                       color=PALETTE[6]),
                series("c (ln n)^2", nn, [c2 * math.log(n) ** 2 for n in nn], style="dotted",
                       marker=False, color=PALETTE[6])],
        xlabel="n (tokens)", ylabel="rank", xscale="log", yscale="log",
        title="Measured ranks vs log n")


def projection_figure(rows: list[MiniLMRow], k_values: tuple[int, ...], draws: int) -> Figure:
    """Theorem 2.3's error and the truncated SVD's against k' (each the median over ``draws`` draws of R), one
    pair of curves per n."""
    ks = list(k_values)
    return line_figure(
        "lowrank-projection-error.png",
        "Theorem 2.3 on MiniLM's attention matrices: median over matrices (of the median over "
        f"{draws} draws of R) of ||P R^T R w - P w|| / ||P w||, w a column of the head's values "
        "(solid), and of the best rank-k' approximation's error on the same w (dashed), against k'.",
        series=[series(f"P R^T R, n={r.n}", ks, r.projection_error, color=PALETTE[i])
                for i, r in enumerate(rows)]
        + [series(f"SVD rank k', n={r.n}", ks, [max(e, 1e-17) for e in r.svd_error],
                  style="dashed", marker=False, color=PALETTE[i]) for i, r in enumerate(rows)],
        xlabel="k'", ylabel="relative error", xscale="log", yscale="log",
        title="Random projection vs truncated SVD")


def layer_text(layers: tuple[int, ...] | list[int]) -> str:
    """SmolLM2's measured layers as the captions and rows name them ("0-29 (all)" for every layer)."""
    layers = list(layers)
    return "0-29 (all)" if layers == list(range(30)) else ", ".join(map(str, layers))


def beside_figure(rows: list[MiniLMRow], smol: list[SmolLM2Row], texts: int, smollm2_texts: int,
                  smollm2_layers: tuple[int, ...]) -> Figure:
    """MiniLM's (on ``texts`` texts) and SmolLM2's (on ``smollm2_texts``, layers ``smollm2_layers``) median
    ranks of sigma and sigma^2 against n."""
    lines = []
    for name, rs, style in (("MiniLM", rows, "solid"), ("SmolLM2", smol, "dashed")):
        nn = [r.n for r in rs]
        ranks = (("k_90", [r.k90 for r in rs]), ("k_99", [r.k99 for r in rs]),
                 ("k_90 (sigma^2)", [r.k90_energy for r in rs]), ("k_99 (sigma^2)", [r.k99_energy for r in rs]))
        for i, (label, values) in enumerate(ranks):
            lines.append(series(f"{name}: {label}", nn, values, color=PALETTE[i], style=style))
    return line_figure(
        "lowrank-minilm-vs-smollm2.png",
        "Median energy ranks of real attention maps against n: fewest singular values reaching 90% / 99% of "
        "sum sigma (k_90, k_99) and of sum sigma^2 (energy), all-MiniLM-L6-v2 (solid: 6 layers x 12 heads, "
        f"{texts} texts, n <= 512) and SmolLM2-135M-Instruct (dashed: causal, 9 heads x layers "
        f"{layer_text(smollm2_layers)}, {smollm2_texts} text(s), n up to {max(r.n for r in smol)}).",
        series=lines, xlabel="n (tokens)", ylabel="rank", xscale="log", yscale="log",
        title="Energy ranks: MiniLM and SmolLM2")
