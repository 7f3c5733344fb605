"""Results of the memorization-capacity experiments: one *panel* = one swept quantity.

A panel sweeps H, n or d_h with the other two fixed (Fig. 2(a), (b), (c); Fig. 4
and 5 have an H panel and an n panel). From the trained cells
(:mod:`attnlab.papers.memorization.capacity_cells`) it derives T* per value,
the bound H (min(n, d_h) - 1) + 1, the least-squares line in the swept value, and
builds the summary rows, the table and the two figures every capacity experiment
shows: what the paper plots (memorization, i.e. mean train accuracy, or the train
MSE on a log scale, against T, one curve per swept value) and T* against the swept
value beside the bound. No maths here beyond bookkeeping: the numbers come from
the cells and :func:`attnlab.papers.memorization.model.theorem1_bound`.
"""

from __future__ import annotations

import math

import numpy as np

from attnlab.papers.memorization.capacity_cells import largest_memorized, linear_fit, run_points
from attnlab.papers.memorization.model import memorization_bound, theorem1_bound
from attnlab.results import PALETTE, Check, LineFigure, Series, Table, check, line_figure, series

PAPER_R2 = 0.98  # §5.2: R^2 of the linear fit of the non-saturated part of Fig. 2(a)
SYMBOL = {"H": "H", "n": "n", "d_h": "d_h"}
AXIS = {"H": "heads H", "n": "context size n", "d_h": "head size d_h"}


def panel_points(swept: str, values, H: int, n: int, d_h: int) -> list[tuple[int, int, int]]:
    """(H, n, d_h) of every value of the swept quantity, the others fixed."""
    return [(v if swept == "H" else H, v if swept == "n" else n, v if swept == "d_h" else d_h) for v in values]


def panel(cfg, cells: list[dict], swept: str, values, H: int) -> dict:
    """Derived numbers of one panel: values, points, bound, T*, linear fit (a, b, R^2) in the swept value."""
    values = list(values)
    points = panel_points(swept, values, H, cfg.n, cfg.d_h)
    bounds = [theorem1_bound(*p) for p in points]
    best = [largest_memorized(cells, *p) for p in points]
    a, b, r2 = linear_fit(values, best)
    return {"swept": swept, "values": values, "points": [list(p) for p in points], "bound": bounds,
            "largest_T_memorized": best, "fit": {"slope": a, "intercept": b, "r2": r2},
            "grid_top": [max(cfg.T_grid(*p)) for p in points]}


def fixed_text(cfg, p: dict, H: int) -> str:
    fixed = {"H": H, "n": cfg.n, "d_h": cfg.d_h}
    return ", ".join(f"{k}={v}" for k, v in ({"d": cfg.d} | fixed).items() if k != p["swept"])


# --------------------------------------------------------------------------------------
# summary rows
# --------------------------------------------------------------------------------------
def bound_rows(cfg, p: dict, H: int, paper_values: dict | None = None) -> list[Check]:
    """Per value: T* >= H (min(n, d_h) - 1) + 1 (pass/FAIL)."""
    rows = []
    for v, bound, t, top in zip(p["values"], p["bound"], p["largest_T_memorized"], p["grid_top"], strict=True):
        detail = f"{cfg.describe_training()}; grid up to T={top}" + (" (grid top reached: a lower bound)"
                                                                     if t == top else "")
        rows.append(check(f"largest T memorized, {p['swept']}={v} ({fixed_text(cfg, p, H)})",
                          (paper_values or {}).get(v), t, f">= H(min(n,d_h)-1)+1 = {bound}", t >= bound, detail))
    return rows


def bound_info_row(p: dict) -> Check:
    """The bound at every value of the panel (info)."""
    return check("Theorem 1 bound H(min(n,d_h)-1)+1 at " + ", ".join(f"{p['swept']}={v}" for v in p["values"]),
                 "H(min(n,d_h)-1)+1", ", ".join(map(str, p["bound"])), None, None)


def r2_row(p: dict, judged: bool = True) -> Check | None:
    """R^2 of T* = a v + b against the paper's >= 0.98 (needs >= 3 values)."""
    if len(p["values"]) < 3:
        return None
    r2 = p["fit"]["r2"]
    return check(f"R^2 of the linear fit of largest T memorized vs {p['swept']}", f">= {PAPER_R2}", r2,
                 f">= {PAPER_R2}" if judged else None, (r2 >= PAPER_R2) if judged else None,
                 f"{p['swept']} = {p['values']}; slope {p['fit']['slope']:.2f}")


def monotone_row(p: dict, judged: bool = True) -> Check | None:
    """T* non-decreasing in the swept value (Theorem 1: more heads / a longer context never hurt);
    with ``judged=False`` shown as info (no criterion)."""
    if len(p["values"]) < 2:
        return None
    best = p["largest_T_memorized"]
    ok = all(b >= a for a, b in zip(best, best[1:]))
    return check(f"largest T memorized is non-decreasing in {p['swept']}", "monotone", ", ".join(map(str, best)),
                 "non-decreasing" if judged else None, ok if judged else None, f"{p['swept']} = {p['values']}")


# --------------------------------------------------------------------------------------
# table and figures
# --------------------------------------------------------------------------------------
def cells_table(cfg, cells: list[dict]) -> Table:
    """One row per trained cell: (H, n, d_h, T), the bound, replicates memorized, mean final score, steps."""
    regression = cfg.TASK == "regression"
    rows = []
    for c in cells:
        score = float(np.mean(c["final_mse"] if regression else c["final_accuracy"]))
        rows.append([c["H"], c["n"], c["d_h"], c["T"], theorem1_bound(c["H"], c["n"], c["d_h"]),
                     f"{sum(c['memorized'])}/{len(c['memorized'])}", score,
                     ", ".join(str(s) if s >= 0 else "-" for s in c["steps_to_memorize"])])
    what = f"train MSE <= {cfg.mse_tol:g}" if regression else "100% train accuracy"
    return Table(f"Memorization per (H, n, d_h, T): replicates at {what} within the step budget",
                 ["H", "n", "d_h", "T", "bound H(r-1)+1", "memorized",
                  "mean final MSE" if regression else "mean final accuracy", "steps to memorize"],
                 rows, ["int", "int", "int", "int", "int", "text", "float", "text"])


def curves_figure(cfg, cells: list[dict], p: dict, file: str, title: str) -> LineFigure:
    """What the paper plots: mean train accuracy (or train MSE, log scale) vs T, one curve per value."""
    regression = cfg.TASK == "regression"
    lines = []
    for i, (v, point) in enumerate(zip(p["values"], p["points"])):
        mine = sorted((c for c in cells if [c["H"], c["n"], c["d_h"]] == point), key=lambda c: c["T"])
        y = [float(np.mean(c["final_mse"] if regression else c["final_accuracy"])) for c in mine]
        if regression:  # a log axis cannot show an exact 0
            y = [max(val, 1e-12) for val in y]
        lines.append(series(f"{p['swept']}={v}", [c["T"] for c in mine], y, color=PALETTE[i % len(PALETTE)]))
    measure = "train MSE" if regression else "memorization (mean train accuracy)"
    return line_figure(file, f"{measure} against the data-set size T, one curve per {AXIS[p['swept']]} "
                             f"({fixed_text(cfg, p, p['points'][0][0])}); {cfg.describe_training()}; "
                             f"mean over {cfg.replicates} replicates.",
                       series=lines, xlabel="data-set size T", ylabel=measure, title=title,
                       yscale="log" if regression else "linear")


def largest_figure(cfg, p: dict, file: str, title: str, *, extra: list[Series] = ()) -> LineFigure:
    """T* vs the swept value, beside Theorem 1's bound, with the fitted line where H is swept."""
    v = p["values"]
    lines = [series("largest T memorized (GD)", v, p["largest_T_memorized"], color=PALETTE[0]),
             series("Theorem 1 bound H(min(n,d_h)-1)+1", v, p["bound"], style="dashed", color=PALETTE[1])]
    a, b = p["fit"]["slope"], p["fit"]["intercept"]
    if p["swept"] == "H" and not math.isnan(a):
        lines.append(series(f"fit {a:.1f} H + {b:.1f} (R^2 {p['fit']['r2']:.3f})", v, [a * x + b for x in v],
                            style="dotted", marker=False, color=PALETTE[0]))
    lines.extend(extra)
    return line_figure(file, f"Largest data-set size T memorized by every replicate against the "
                             f"{AXIS[p['swept']]} ({fixed_text(cfg, p, p['points'][0][0])}); dashed: Theorem 1's "
                             f"constructive bound; {cfg.describe_training()}.",
                       series=lines, xlabel=AXIS[p["swept"]], ylabel="T", title=title)


def general_position_series(p: dict, d: int) -> list[Series]:
    """App. I.1's alternative H (d - 1) + 1 at every point of the panel (Proposition 5's rank cap)."""
    return [series("H(d-1)+1 (App. I.1, Prop. 5)", p["values"],
                   [memorization_bound(h, d) for h, _, _ in p["points"]], style="dashdot", color=PALETTE[2])]


def run_h_and_n_panels(cfg, run_dir, experiment_id: str) -> tuple[list[dict], list[dict]]:
    """Fig. 4 and 5 layout: an H panel (n = cfg.n) and, if cfg.n_grid is not empty, an n panel
    (H = cfg.H); -> (cells, [panel_H, panel_n])."""
    specs = [("H", cfg.H_grid, cfg.H_grid[0])] + ([("n", cfg.n_grid, cfg.H)] if cfg.n_grid else [])
    cells: list[dict] = []
    for swept, values, H in specs:
        cells = run_points(cfg, panel_points(swept, values, H, cfg.n, cfg.d_h), run_dir, experiment_id, cells)
    return cells, [panel(cfg, cells, swept, values, H) for swept, values, H in specs]
