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

Which rows speak for the text. Theorem 1 says that weights memorizing H (min(n, d_h) - 1) + 1
examples *exist*; it does not say that gradient descent finds them (App. A: "it is not
guaranteed that if a memorizing solution exists, GD would be able to find it"). So the rows
"T* >= H (min(n, d_h) - 1) + 1" are attnlab's own statement, "gradient descent reaches the
bound" (role own: holds / refuted), never a reproduction of the theorem. The rows that compare
with what §5.2 and the captions of Fig. 2, 4 and 5 say of the trained models (the R^2 >= 0.98
of Fig. 2(a), "monotonically with n", ...) are anchored to those sentences
(:mod:`attnlab.ledger`); where the experiment departs from the text's protocol (:func:`deviations`:
another model than the authors' released one, another optimizer, a smaller step budget, other
sizes) those rows name the deviations and are inconclusive without a control run.
"""

from __future__ import annotations

import math

from attnlab.checks import NO_ERROR, Bound, Censored, Check, at_least, compare, equals, info, uncensored
from attnlab.deviations import Deviation
from attnlab.papers.memorization.capacity_cells import Cell, largest_memorized, linear_fit, run_points
from attnlab.papers.memorization.model import memorization_bound, theorem1_bound
from attnlab.results import PALETTE, LineFigure, Series, Table, line_figure, series

PAPER_R2 = 0.98  # §5.2: R^2 of the linear fit of the non-saturated part of Fig. 2(a)
SYMBOL = {"H": "H", "n": "n", "d_h": "d_h"}
AXIS = {"H": "heads H", "n": "context size n", "d_h": "head size d_h"}
WHERE = {"H": "§5.2, Fig. 2(a)", "n": "§5.2, Fig. 2(b)", "d_h": "§5.2, Fig. 2(c)"}
GD_REACHES_BOUND = ("attnlab's statement, not the text's: gradient descent reaches Theorem 1's bound (the theorem "
                    "says memorizing weights exist; App. A: GD is not guaranteed to find them)")


def another_model(cfg) -> str:
    """What the model of ``cfg.model`` is, where it is not the authors' model as released ("" where it is).

    §5.2 trains "an embedding layer, positional encoding, and an Attention layer"; the authors'
    released model has d_v = 1 per head and masks the query's own key
    (:data:`attnlab.papers.memorization.authors_model.AUTHORS_RELEASED`; ``model="released"``).
    ``plain`` is eqs. (1)-(6) on the raw tokens with d_v = d_h, and ``authors`` has the embedding
    and positions but d_v = d_h and the query attending to itself.
    """
    if cfg.model == "released":
        return ""
    if cfg.model == "authors":
        return ("another model: the authors' architecture with d_v = d_h and the query attending to itself, not "
                "the released one (d_v = 1, the query's own key masked)")
    return ("another model: eqs. (1)-(6) on the raw tokens with d_v = d_h, not §5.2's embedding + positional "
            "encoding + attention as the authors released it (d_v = 1)")


SIZE_FIELDS = ("d", "n", "d_h", "n_classes", "H", "H_grid", "n_grid", "d_h_grid")  # what the text's figures fix
TEXT_PROTOCOL = "Adam, lr 1e-3, batch 256, linear warmup + cosine decay (App. A)"


def deviations(cfg) -> list[Deviation]:
    """How a capacity experiment's protocol departs from the text's (App. A and the figures, as the
    experiment's ``paper`` preset writes them: :data:`~attnlab.papers.memorization.capacity_cells.AUTHORS_PROTOCOL`
    and the text's grids): another model than the released one, another optimizer, a smaller step
    budget, other sizes. The text's rows of the experiment name every one (:func:`deviation_ids`); the
    own rows (gradient descent against Theorem 1's bound) are about attnlab's setup and name none."""
    text = type(cfg).PRESETS["paper"]
    out = []
    model = another_model(cfg)
    if model:
        out.append(Deviation("another-model", "model", model.removeprefix("another model: "),
                             "the plain model trains without the embedding's d x d products; model=released is the "
                             "authors' model", control="--set model=released"))
    if (cfg.optimizer, cfg.lr, cfg.batch) != (text["optimizer"], text["lr"], text["batch"]):
        out.append(Deviation("optimizer", "optimizer", f"{cfg.describe_training()}; the text: {TEXT_PROTOCOL}",
                             "the quick scale's full-batch steps at a higher rate train in minutes on a CPU",
                             control="--scale paper"))
    if cfg.steps < text["steps"] or cfg.min_epochs < text["min_epochs"]:
        out.append(Deviation("step-budget", "budget",
                             f"{cfg.steps:,} steps (at least {cfg.min_epochs} epochs); the text: at least "
                             f"{text['steps']:,} steps and {text['min_epochs']} epochs",
                             "the text's budget takes GPU hours (the dry run of --scale paper)",
                             control="--scale paper"))
    def stated(k):  # the text's value: the paper preset's, else the field's default (d_h None: d_h = d)
        v = text[k] if k in text else type(cfg).__dataclass_fields__[k].default
        return stated("d") if k == "d_h" and v is None else v

    sizes = {k: (getattr(cfg, k), stated(k)) for k in SIZE_FIELDS if hasattr(cfg, k)}
    other = {k: v for k, (v, t) in sizes.items() if t is not None and tuple(_seq(v)) != tuple(_seq(t))}
    if other:
        out.append(Deviation("size", "size", ", ".join(f"{k}={_text(v)} (the text: {_text(sizes[k][1])})"
                                                        for k, v in other.items()),
                             "smaller models and grids that train in minutes", control="--scale paper"))
    return out


def deviation_ids(cfg) -> tuple[str, ...]:
    """The ids of :func:`deviations`: every one touches the text's rows of a capacity experiment."""
    return tuple(d.id for d in deviations(cfg))


def _seq(v: object) -> tuple | list:
    return v if isinstance(v, (list, tuple)) else (v,)


def _text(v: object) -> str:
    return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def _join(*reasons: str) -> str:
    return "; ".join(r for r in reasons if r)


def panel_points(swept: str, values, H: int, n: int, d_h: int) -> list[tuple[int, int, int]]:
    """(H, n, d_h) of every value of the swept quantity, the others fixed."""
    return [(v if swept == "H" else H, v if swept == "n" else n, v if swept == "d_h" else d_h) for v in values]


def panel(cfg, cells: list[Cell], swept: str, values, H: int) -> dict:
    """Derived numbers of one panel: values, points, bound, T*, whether T* is censored (the top of
    its grid was memorized, so the grid cannot say how far it goes), and the linear fit (a, b, R^2)
    in the swept value over the exact T* (nan when one is censored)."""
    values = list(values)
    points = panel_points(swept, values, H, cfg.n, cfg.d_h)
    bounds = [theorem1_bound(*p) for p in points]
    best = [largest_memorized(cells, *p) for p in points]
    tops = [max(cfg.T_grid(*p)) for p in points]
    censored = [t == top for t, top in zip(best, tops)]
    a, b, r2 = (float("nan"),) * 3 if any(censored) else linear_fit(values, best)
    return {"swept": swept, "values": values, "points": [list(p) for p in points], "bound": bounds,
            "largest_T_memorized": best, "censored": censored, "fit": {"slope": a, "intercept": b, "r2": r2},
            "grid_top": tops}


def largest_T(p: dict) -> list:
    """T* per value of the panel, as measured values: an int, or ``Bound.at_least(top)`` where the
    largest T of the grid was memorized."""
    return [Bound.at_least(t, f"T={t} is the top of the grid and was memorized") if c else t
            for t, c in zip(p["largest_T_memorized"], p.get("censored", [False] * len(p["values"])))]


def fixed_text(cfg, p: dict, H: int) -> str:
    fixed = {"H": H, "n": cfg.n, "d_h": cfg.d_h}
    return ", ".join(f"{k}={v}" for k, v in ({"d": cfg.d} | fixed).items() if k != p["swept"])


def _where(p: dict) -> str:
    return WHERE.get(p["swept"].split(" ")[0], "§5.2, Fig. 2")


# --------------------------------------------------------------------------------------
# summary rows
# --------------------------------------------------------------------------------------
def bound_rows(cfg, p: dict, H: int, where: str = "") -> list[Check]:
    """Per value: T* >= H (min(n, d_h) - 1) + 1, T* censored at the grid top where it was memorized.

    attnlab's own statement (role own): gradient descent, on this model and within this budget,
    reaches Theorem 1's bound. Theorem 1 is an existence statement, so a T* below the bound
    refutes only the statement about gradient descent, never the theorem."""
    rows = []
    for v, bound, t, top in zip(p["values"], p["bound"], largest_T(p), p["grid_top"], strict=True):
        rows.append(at_least(
            t, bound, f"{GD_REACHES_BOUND}; {cfg.describe_training()}; T* = the largest T of the grid (up to {top}) "
                      f"memorized by every replicate within the step budget",
            {"T_star": t if isinstance(t, int) else None, "grid_top": top, "bound": bound},
            quantity=f"largest T memorized, {p['swept']}={v} ({fixed_text(cfg, p, H)}), against Theorem 1's "
                     f"H(min(n,d_h)-1)+1",
            where=where or _where(p), role="own"))
    return rows


def bound_info_row(p: dict) -> Check:
    """The bound at every value of the panel (info)."""
    return info("Theorem 1 bound H(min(n,d_h)-1)+1 at " + ", ".join(f"{p['swept']}={v}" for v in p["values"]),
                ", ".join(map(str, p["bound"])), where="§4, Theorem 1")


def r2_row(p: dict, judged: bool = True, where: str = "§5.2, Fig. 2(a)", *, anchor: str = "",
           cannot_decide: str = "", deviations: tuple[str, ...] = ()) -> Check | None:
    """R^2 of T* = a v + b against the paper's >= 0.98 (needs >= 3 values). A fit over a grid with a
    censored T* measures nothing: the row is then inconclusive and names the censored point.

    A judged row is the text's (anchored to ``anchor``, the sentence it checks); ``deviations`` names the
    experiment's departures from the text's protocol (:func:`deviation_ids`), which leave it inconclusive
    without a control run; ``cannot_decide`` says why else it cannot decide the sentence."""
    if len(p["values"]) < 3:
        return None
    Ts = largest_T(p)
    listing = ", ".join(f"{p['swept']}={v}: {t}" for v, t in zip(p["values"], Ts))
    quantity = f"R^2 of the linear fit of largest T memorized vs {p['swept']}"
    text = dict(anchor=anchor, erratum=NO_ERROR, deviations=deviations,
                falsifier=f"the least-squares line of T* against {p['swept']} fits with R^2 below {PAPER_R2}")
    try:
        exact = uncensored(Ts, f"the fit of T* against {p['swept']}")
    except Censored as err:
        if not judged:
            return info(quantity, "not fitted", where=where, detail=f"{err}; T* = {listing}")
        return compare(quantity, Bound.at_most(1.0, "not fitted"), ">=", PAPER_R2, paper_value=f">= {PAPER_R2}",
                       where=where, cannot_decide=_join(str(err), cannot_decide), detail=f"T* = {listing}",
                       values={"T_star": [None if isinstance(t, Bound) else t for t in Ts],
                               "censored": p.get("censored")}, **text)
    a, b, r2 = linear_fit(p["values"], exact)
    detail = f"T* = {listing}; slope {a:.2f}, intercept {b:.1f}"
    if not judged:
        return info(quantity, r2, where=where, detail=detail)
    return at_least(r2, PAPER_R2, detail, {"slope": a, "intercept": b, "T_star": exact},
                    quantity=quantity, paper_value=f">= {PAPER_R2}", where=where, cannot_decide=cannot_decide, **text)


def monotone_row(p: dict, judged: bool = True, where: str = "", *, anchor: str = "",
                 cannot_decide: str = "", deviations: tuple[str, ...] = ()) -> Check | None:
    """T* non-decreasing in the swept value (§5.2: "memorization increases monotonically with n"):
    the number of adjacent values where T* decreases, required to be 0. A pair with a censored
    T* decreases for sure only where the bounds say so; otherwise the count is a bound.

    A judged row is the text's (anchored to ``anchor``); ``deviations``, ``cannot_decide`` as in :func:`r2_row`."""
    if len(p["values"]) < 2:
        return None
    Ts = largest_T(p)

    def ends(t):
        return (t.lower, t.upper) if isinstance(t, Bound) else (t, t)

    sure = undecided = 0
    for a, b in zip(Ts, Ts[1:]):
        (a_lo, a_hi), (b_lo, b_hi) = ends(a), ends(b)
        if b_hi < a_lo:
            sure += 1
        elif b_lo < a_hi:
            undecided += 1
    measured = Bound(sure, sure + undecided, "censored T* at the grid top") if undecided else sure
    quantity = f"adjacent {p['swept']} values where the largest T memorized decreases"
    detail = "T* = " + ", ".join(f"{p['swept']}={v}: {t}" for v, t in zip(p["values"], Ts))
    if not judged:
        return info(quantity, measured, where=where or _where(p),
                    detail=detail)
    return equals(measured, 0, detail, quantity=quantity, where=where or _where(p),
                  paper_value="monotone increase", cannot_decide=cannot_decide, anchor=anchor, erratum=NO_ERROR,
                  deviations=deviations,
                  falsifier=f"T* decreases from one {p['swept'].split(' ')[0]} of the grid to the next")


# --------------------------------------------------------------------------------------
# table and figures
# --------------------------------------------------------------------------------------
def cells_table(cfg, cells: list[Cell]) -> Table:
    """One row per trained cell: (H, n, d_h, T), the bound, replicates memorized, mean final score, steps."""
    regression = cfg.TASK == "regression"
    rows = []
    for c in cells:
        rows.append([c.H, c.n, c.d_h, c.T, theorem1_bound(c.H, c.n, c.d_h),
                     f"{sum(c.memorized)}/{len(c.memorized)}", c.score,
                     ", ".join(str(s) if s >= 0 else "-" for s in c.steps_to_memorize)])
    what = f"train MSE <= {cfg.mse_tol:g}" if regression else "100% train accuracy"
    return Table(f"Memorization per (H, n, d_h, T): replicates at {what} within the step budget",
                 ["H", "n", "d_h", "T", "bound H(r-1)+1", "memorized",
                  "mean final MSE" if regression else "mean final accuracy", "steps to memorize"],
                 rows, ["int", "int", "int", "int", "int", "text", "float", "text"])


def curves_figure(cfg, cells: list[Cell], p: dict, file: str, title: str) -> LineFigure:
    """What the paper plots: mean train accuracy (or train MSE, log scale) vs T, one curve per value."""
    regression = cfg.TASK == "regression"
    lines = []
    for i, (v, point) in enumerate(zip(p["values"], p["points"])):
        mine = sorted((c for c in cells if [c.H, c.n, c.d_h] == point), key=lambda c: c.T)
        y = [c.score for c in mine]
        if regression:  # a log axis cannot show an exact 0
            y = [max(val, 1e-12) for val in y]
        lines.append(series(f"{p['swept']}={v}", [c.T for c in mine], y, color=PALETTE[i % len(PALETTE)]))
    measure = "train MSE" if regression else "memorization (mean train accuracy)"
    return line_figure(file, f"{measure} against the data-set size T, one curve per {AXIS[p['swept']]} "
                             f"({fixed_text(cfg, p, p['points'][0][0])}); {cfg.describe_training()}; "
                             f"mean over {cfg.replicates} replicates.",
                       series=lines, xlabel="data-set size T", ylabel=measure, title=title,
                       yscale="log" if regression else "linear")


def largest_figure(cfg, p: dict, file: str, title: str, *, extra: list[Series] = ()) -> LineFigure:
    """T* vs the swept value, beside Theorem 1's bound, with the fitted line where H is swept."""
    v = p["values"]
    lines = [series("largest T memorized (GD; open marker with arrow: a lower bound, T* at the top of its grid)"
                    if any(p.get("censored", [])) else "largest T memorized (GD)", v, p["largest_T_memorized"],
                    color=PALETTE[0], censored=["lower" if c else None for c in p.get("censored", [False] * len(v))]),
             series("Theorem 1 bound H(min(n,d_h)-1)+1", v, p["bound"], style="dashed", color=PALETTE[1])]
    a, b = p["fit"]["slope"], p["fit"]["intercept"]
    if p["swept"] == "H" and not math.isnan(a):
        lines.append(series(f"fit {a:.1f} H + {b:.1f} (R^2 {p['fit']['r2']:.3f})", v, [a * x + b for x in v],
                            style="dotted", marker=False, color=PALETTE[0]))
    lines.extend(extra)
    cens = [f"{p['swept']}={x}" for x, c in zip(v, p.get("censored", [])) if c]
    cens_text = (f" At {', '.join(cens)} the top of the grid was memorized: the point is a lower bound."
                 if cens else "")
    return line_figure(file, f"Largest data-set size T memorized by every replicate against the "
                             f"{AXIS[p['swept']]} ({fixed_text(cfg, p, p['points'][0][0])}); dashed: Theorem 1's "
                             f"constructive bound; {cfg.describe_training()}.{cens_text}",
                       series=lines, xlabel=AXIS[p["swept"]], ylabel="T", title=title)


def general_position_series(p: dict, d: int) -> list[Series]:
    """App. I.1's alternative H (d - 1) + 1 at every point of the panel (Proposition 5's rank cap)."""
    return [series("H(d-1)+1 (App. I.1, Prop. 5)", p["values"],
                   [memorization_bound(h, d) for h, _, _ in p["points"]], style="dashdot", color=PALETTE[2])]


def run_h_and_n_panels(cfg, run_dir, experiment_id: str) -> tuple[list[Cell], list[dict]]:
    """Fig. 4 and 5 layout: an H panel (n = cfg.n) and, if cfg.n_grid is not empty, an n panel
    (H = cfg.H); -> (cells, [panel_H, panel_n])."""
    specs = [("H", cfg.H_grid, cfg.H_grid[0])] + ([("n", cfg.n_grid, cfg.H)] if cfg.n_grid else [])
    cells: list[Cell] = []
    for swept, values, H in specs:
        cells = run_points(cfg, panel_points(swept, values, H, cfg.n, cfg.d_h), run_dir, experiment_id, cells)
    return cells, [panel(cfg, cells, swept, values, H) for swept, values, H in specs]
