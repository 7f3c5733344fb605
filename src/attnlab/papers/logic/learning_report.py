"""What logic.learning reports of its trained models: the measured outcome, its stored form, the tables and the
figures (Fig. 1: system 2's k^t q against q_true; Fig. 2: log10 MSE per L-BFGS step per flavour; the free
flavour's ablations). The summary rows, deviations and notes are in :mod:`~attnlab.papers.logic.learning_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from attnlab.papers.logic.centring import centred_unit
from attnlab.papers.logic.hand_built import HandBuilt
from attnlab.papers.logic.lbfgs_training import Trained, TrainSettings
from attnlab.papers.logic.learned_mechanism import LEARNED, CentredFit, FreeMechanism
from attnlab.papers.logic.members import FLAVOURS, SYSTEMS
from attnlab.papers.logic.model import hidden_width
from attnlab.papers.logic.units import GATED, R2_TARGETS
from attnlab.results import PALETTE, Figure, Table, bar_figure, heatmap_figure, heatmap_panel, line_figure, series


def spread(x: Sequence[float] | np.ndarray) -> tuple[float, float, float, float, float]:
    """(median, min, max, 25th percentile, 75th percentile) of ``x``, as floats."""
    x = np.asarray(x, np.float64)
    return (float(np.median(x)), float(np.min(x)), float(np.max(x)),
            float(np.percentile(x, 25)), float(np.percentile(x, 75)))


@dataclass(frozen=True)
class Outcome:
    """Everything logic.learning reports, computed for ``cfg``
    (:func:`~attnlab.papers.logic.experiments.learning.compute`)."""

    cfg: TrainSettings
    trained: Trained
    fits: list[CentredFit]
    mechanism: FreeMechanism
    hand: HandBuilt

    def median_final(self, name: str) -> float:
        """The median over seeds of a main model's final log10 MSE."""
        return spread([self.trained.final[j] for j in self.trained.main[name]])[0]

    def to_dict(self) -> dict[str, Any]:
        """The stored form (results.json "data")."""
        tr, fm = self.trained, self.mechanism
        final = tr.final
        return {"final_log10_mse": {name: [final[j] for j in js] for name, js in tr.main.items()},
                "system2_fit": [[f.name, f.seed_index, f.corr, f.scale] for f in self.fits],
                "fractions": fm.fractions, "ablations": fm.ablations, "hand_built_fractions": fm.hand_fractions,
                "units": [u.to_dict() for u in fm.units],
                "hand_built_units": [{s: u.to_dict() for s, u in hu.items()} for hu in fm.hand_units],
                "hand_built_mse": self.hand.mse, "solution2_layernorm": self.hand.layernorm,
                "train_seconds": tr.seconds, "sensitivity": [list(r) for r in sensitivity_rows(self.cfg, tr)]}


# ---- tables -------------------------------------------------------------------------------
def sensitivity_rows(cfg: TrainSettings, tr: Trained) -> list[list[Any]]:
    """Per sweep setting and flavour: seeds, median, min, max of the final log10 MSE, and the main setting's
    median over the same seeds."""
    rows = []
    for group in dict.fromkeys(m.group for m in tr.members if m.group != "main"):
        for f in FLAVOURS:
            js = [j for j, m in enumerate(tr.members) if m.group == group and m.name == f]
            if js:
                md, lo, hi, _, _ = spread([tr.final[j] for j in js])
                base = [tr.final[j] for j in tr.main[f] if tr.members[j].seed_index < cfg.sweep_seeds]
                rows.append([group, f, len(js), md, lo, hi, float(np.median(base))])
    return rows


def tables(out: Outcome) -> list[Table]:
    """Final losses, Fig. 1 in numbers, the mechanism and ablation tables, and the sensitivity (if swept)."""
    cfg, tr, fm = out.cfg, out.trained, out.mechanism
    N, M = cfg.N, cfg.M
    var_y = {i: float(np.var(tr.tasks[i].Y)) for i in range(cfg.seeds)}
    loss_rows = []
    for name, js in tr.main.items():
        md, lo, hi, q1, q3 = spread([tr.final[j] for j in js])
        r2s = [1 - 10 ** tr.final[j] / var_y[tr.members[j].seed_index] for j in js]
        loss_rows.append([name, len(js), md, lo, hi, q1, q3, float(np.median(r2s))])
    loss_table = Table(f"Final training log10 MSE after {cfg.iterations} L-BFGS steps of {cfg.inner_iterations} "
                       "iteration(s) "
                       f"(batch {cfg.batch}, "
                       f"N = {N}, M = {M}), over {cfg.seeds} seeds; R^2 = 1 - MSE / Var(Y)",
                       ["model", "seeds", "median", "min", "max", "25%", "75%", "median R^2"], loss_rows,
                       ["text", "int", "float", "float", "float", "float", "float", "float"])
    sens_rows = sensitivity_rows(cfg, tr)
    sens_table = Table(f"Sensitivity: final log10 MSE when lambda or lr changes (main: lambda = {cfg.extra_weight:g}, "
                       f"lr = {cfg.lr:g}), over the first {cfg.sweep_seeds} seed(s)",
                       ["setting", "flavour", "seeds", "median", "min", "max", "main setting, same seeds"],
                       sens_rows, ["text", "text", "int", "float", "float", "float", "float"])
    fit_rows = []
    for name in ("system 2", "lean-2", "free"):
        cs = [abs(f.corr) for f in out.fits if f.name == name]
        md, lo, hi, _, _ = spread(cs)
        fit_rows.append([name, len(cs), md, lo, hi])
    fit_table = Table("Fig. 1 in numbers: |correlation| of the learned CC block of k^t q with q_true, both with row "
                      "and column means removed (the part of A_CC the output can see)",
                      ["model", "seeds", "median |corr|", "min", "max"], fit_rows,
                      ["text", "int", "float", "float", "float"])
    hand = fm.hand_fractions
    mech_rows = []
    for k, xs in fm.fractions.items():
        md, lo, hi, _, _ = spread(xs)
        mech_rows.append([k, md, lo, hi, hand["1"][k], hand["2"][k], hand["3"][k]])
    mech_table = Table(f"Mechanism of the free flavour (structure fractions modulo the gauge, median and range over "
                       f"{cfg.seeds} seeds) beside the hand-built solutions 1, 2, 3 for q_true of seed index 0",
                       ["structure", "free: median", "min", "max", "hand-built 1", "hand-built 2", "hand-built 3"],
                       mech_rows, ["text"] + ["float"] * 6)
    abl_cols = ["ablation"] + [f"seed {i}" for i in fm.seeds] + ["median over learned seeds"]
    abl_table_rows = []
    for k, xs in fm.ablations.items():
        cells = [f"{x:.3g} (x{x / max(f, 1e-300):.3g})" for x, f in zip(xs, fm.full)]
        abl_table_rows.append([k, *cells, float(np.median(fm.over_learned(xs))) if fm.learned else None])
    abl_table_rows.append(["v's CC block: centred |corr| with A_2^t = q_true^t (solution 3) / with I_N (solution 1)",
                           *[f"{abs(x):.2f} / {abs(y):.2f}" for x, y in zip(fm.corr_A2t, fm.corr_identity)],
                           float(np.median([abs(x) for x in fm.over_learned(fm.corr_A2t)])) if fm.learned else None])
    abl_table = Table(f"Which mechanism the free flavour uses: MSE / Var(Y) on {cfg.test_batch} fresh sequences per "
                      f"seed after each ablation (in brackets: times the trained model's MSE); a seed counts as "
                      f"learned when its own MSE is <= {LEARNED:g} Var(Y)",
                      abl_cols, abl_table_rows, ["text"] * (len(fm.seeds) + 1) + ["float"])
    # the errata table is the report's own (results.json "errata"), not repeated here
    return [loss_table, fit_table, mech_table, abl_table, units_table(out)] + ([sens_table] if sens_rows else [])


def units_table(out: Outcome) -> Table:
    """Per free model and, beside it, the hand-built solutions for the same q_true: the feed-forward units needed
    for each R^2 target, what gates the units carrying R^2 0.99, the units of each type and what removing them costs."""
    cfg, fm = out.cfg, out.mechanism
    rows = []
    for a, i in enumerate(fm.seeds):
        learned = "" if a in fm.learned else " (not learned)"
        for name, u in [(f"free, seed {i}{learned}", fm.units[a])] + [(f"  hand-built {s}", fm.hand_units[a][s])
                                                                       for s in ("1", "2", "3")]:
            rows.append([name, *[str(u.needed[t]) for t in R2_TARGETS],
                         *[u.share[g] for g in ("current category", "previous category", "position")],
                         f"{u.types['1']}/{u.types['2']}/{u.types['3']}", *[u.cost[t] for t in ("1", "2", "3")]])
    return Table(f"Feed-forward units (h = {hidden_width(cfg.N, cfg.M)}) on {cfg.test_batch} fresh sequences per seed: "
                 "units needed for R^2 0.9 / 0.99 / 0.999 (read-out refitted on the units kept, greedy), the share of "
                 "the activation of the units carrying R^2 0.99 on one current category, previous category, position "
                 f"(weighted by the R^2 each adds), the units gated (share >= {GATED:g}) as solution 1's (previous "
                 "category), 2's (position), 3's (current category alone), and MSE / Var(Y) added by mean-ablating "
                 "each kind; the hand-built solutions without the LayerNorm, for the same q_true",
                 ["model", "R^2 0.9", "R^2 0.99", "R^2 0.999", "share: current", "share: previous", "share: position",
                  "units 1/2/3", "lost without 1", "lost without 2", "lost without 3"], rows,
                 ["text"] * 4 + ["float"] * 3 + ["text"] + ["float"] * 3)


# ---- figures ------------------------------------------------------------------------------
def figure1(out: Outcome) -> Figure:
    """Fig. 1: system 2's learned CC block of k^t q beside q_true, for the median seed by |corr|."""
    cfg, tr = out.cfg, out.trained
    N, M = cfg.N, cfg.M
    # the figure shows the seed with the median |corr| (not the best one); every seed's value is in the caption
    s2 = [f for f in out.fits if f.name == "system 2"]
    shown = sorted(s2, key=lambda f: (abs(f.corr), f.seed_index, f.corr, f.scale))[(len(s2) - 1) // 2]
    i0, corr0, scale0 = shown.seed_index, shown.corr, shown.scale
    j0 = next(j for j in tr.main["system 2"] if tr.members[j].seed_index == i0)
    e0 = tr.effective(j0, N, M)
    A0 = (e0["k"].T @ e0["q"]).numpy()[:N, :N]
    q0 = tr.tasks[i0].q_true
    labels = [str(a + 1) for a in range(N)]
    per_seed = ", ".join(f"{f.corr:.2f}" for f in sorted(s2, key=lambda f: f.seed_index))
    return heatmap_figure(
        "fig1-system2-ktq-vs-qtrue.png",
        f"Fig. 1: system 2 (q, k on categories only, B {cfg.system2_B}), seed index {i0}, the median of {len(s2)} seeds by |correlation| "
        f"(correlations per seed index 0..{len(s2) - 1}: {per_seed}). Left: q_true (N = {N}) with row and column "
        f"means removed, scaled to unit root-mean-square. Right: the learned CC block of k^t q, the same centring "
        f"and scaling, times the sign of its correlation with q_true ({corr0:.3f}; least-squares scale {scale0:.3g}). "
        f"Row: category of the key token j, column: of the query i.",
        panels=[heatmap_panel("q_true (centred, unit RMS)", centred_unit(q0), xlabels=labels, ylabels=labels),
                heatmap_panel("learned k^t q, CC block (centred, unit RMS)", np.sign(corr0 or 1.0) * centred_unit(A0),
                              xlabels=labels, ylabels=labels)],
        ncols=2, cmap="RdBu_r", colorbar="value", xlabel="category of X_i", ylabel="category of X_j",
        title=f"System 2: learned k^t q against q_true (median seed of {len(s2)}, |corr| {abs(corr0):.2f})")


def figure2(out: Outcome) -> Figure:
    """Fig. 2: log10 MSE per L-BFGS step, per flavour (median, min, max) and per restricted system (median)."""
    cfg, tr = out.cfg, out.trained
    its = list(range(1, cfg.iterations + 1))
    logmse = tr.log10_mse
    ser = []
    for c, name in enumerate(FLAVOURS + SYSTEMS):
        js = tr.main[name]
        col = PALETTE[c % len(PALETTE)]
        style = "solid" if name in FLAVOURS else "dashed"
        ser.append(series(f"{name} (median)", its, np.median(logmse[:, js], axis=1).tolist(), color=col, style=style,
                          marker=False))
        if name in FLAVOURS:
            ser.append(series(f"{name} (min, max)", its, logmse[:, js].min(axis=1).tolist(), color=col, style="dotted",
                              marker=False))
            ser.append(series("", its, logmse[:, js].max(axis=1).tolist(), color=col, style="dotted", marker=False))
    return line_figure(
        "fig2-log-mse-per-flavour.png",
        f"Fig. 2: training log10 MSE per L-BFGS step ({cfg.inner_iterations} iteration(s) each) of the combined "
        f"model in four flavours (solid: median over "
        f"{cfg.seeds} seeds, dotted: min and max), and of the three restricted systems (dashed, median); "
        f"batch {cfg.batch}, N = {cfg.N}, M = {cfg.M}, lambda = {cfg.extra_weight:g}, lr = {cfg.lr:g}.",
        series=ser, xlabel="L-BFGS step", ylabel="log10 MSE", title="Combined model, four flavours")


def figure3(out: Outcome) -> Figure:
    """The free flavour's error after each ablation, per seed (log scale)."""
    cfg, fm = out.cfg, out.mechanism
    short = [k.split(":")[0] for k in fm.ablations]
    return bar_figure(
        "fig3-free-flavour-ablations.png",
        f"Which component of the free flavour carries the logic: MSE / Var(Y) on {cfg.test_batch} fresh sequences "
        f"after each ablation (mechanism table), per seed (seed index {', '.join(map(str, fm.seeds))}); log scale. "
        "'full' is the trained model; an ablation that leaves the bar near 'full' removes nothing the model uses.",
        categories=short, groups=[{"label": f"seed {i}", "values": [max(fm.ablations[k][a], 1e-12)
                                                                   for k in fm.ablations]}
                                  for a, i in enumerate(fm.seeds)],
        ylabel="MSE / Var(Y)", yscale="log", title="Free flavour: error after each ablation")


def figures(out: Outcome) -> list[Figure]:
    """Figs. 1-2 of the text and the free flavour's ablations."""
    return [figure1(out), figure2(out), figure3(out)]
