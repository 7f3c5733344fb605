"""Typed experiment results: checks, tables, figures, notes, raw data and sweep scalars.

An experiment's ``run(cfg, run_dir)`` returns an :class:`ExperimentResult`; the run
directory stores ``result.to_dict()`` in results.json, and reports are built from
that stored JSON alone (:mod:`attnlab.reports`), so a report can always be rebuilt.

    ExperimentResult(
        summary=[Check(quantity, measured, relation, threshold, role=..., paper_value=..., where=...)],
        tables=[Table(title, columns, rows, formats)],
        figures=[line_figure(...) | bar_figure(...) | heatmap_figure(...)],
        notes=[str],
        data={raw numbers},
        scalars={name: number},   # one row of a sweep's results table
        interactive=[viewer_data(maps, tokens, ...)],  # attention viewers in report.html
        deviations=[Deviation(id, kind, what, why, control)],  # where the protocol departs from the text's
    )

``deviations`` lists every way the experiment's protocol departs from its text's
(:mod:`attnlab.deviations`; an empty list: none), and a summary row names those that touch it:
such a row is reproduced or differs only with its control run, inconclusive otherwise.
``None`` means the experiment has not said (an experiment that measures no text's result).

A :class:`attnlab.checks.Check` is one line of the paper-versus-measured summary: the
measured value, the relation and threshold it is judged by, the paper's value and where
the text states it, and the ledger entry it is anchored to; its verdict (reproduced,
differs, inconclusive for the text's statements; holds, refuted, inconclusive for
attnlab's own; sanity, fail, info) is derived from those numbers (:mod:`attnlab.checks`).

Figures are specs (plain data), drawn only when a report is built. Their JSON::

    {"kind": "line", "file": "name.png", "caption": str, "title": str,
     "xlabel": str, "ylabel": str, "xscale": "linear"|"log", "yscale": ...,
     "series": [{"label": str, "x": [...], "y": [...], "style": "solid"|"dashed"|"dotted"|"dashdot",
                 "marker": bool, "color": str | None}]}
    {"kind": "bar", "file": ..., "caption": ..., "title": ..., "ylabel": ..., "yscale": ...,
     "categories": [str], "groups": [{"label": str, "values": [number|None]}]}
    {"kind": "heatmap", "file": ..., "caption": ..., "title": ..., "ncols": int,
     "cmap": str, "vmin": number|None, "vmax": number|None, "colorbar": str,
     "xlabel": str, "ylabel": str,
     "panels": [{"title": str, "values": [[number, ...], ...],   # rows x columns
                 "xlabels": [str] | None, "ylabels": [str] | None}]}

An interactive block is the JSON of :func:`attnlab.reports.viewer.viewer_data` (attention maps
in thousandths with their tokens, capped in tokens and size, and optionally per-head scores with
each head's rank); report.html shows each as an offline attention viewer, report.md says it is there.

A heatmap figure is a grid of matrices (attention maps: row = query, column = key),
``ncols`` panels per row, one shared colour scale; panels with tick labels are drawn
large enough to read them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from attnlab.checks import Check, count_verdicts, legacy_check
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.runs.jsonable import to_jsonable

FIGURE_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\.png$")
AXIS_SCALES = ("linear", "log")
LINE_STYLES = ("solid", "dashed", "dotted", "dashdot", "points")  # points: markers only, no line
HEATMAP_CMAPS = ("viridis", "magma", "Blues", "Greys", "RdBu_r")
# A colour-blind-safe palette (Okabe-Ito), in a fixed order so figures are stable.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


def check_from_dict(d: Mapping[str, Any]) -> Check:
    """A stored summary row back as a :class:`Check` (rows stored before verdicts existed
    carry ``status`` pass/FAIL/info and ``expected`` text)."""
    if "verdict" in d and d.get("relation") not in (None, "legacy") or d.get("role") == "info":
        return Check.from_dict(d)
    if "status" in d:
        passed = {"pass": True, "FAIL": False}.get(d.get("status"))
        return legacy_check(d.get("quantity", ""), d.get("paper_value"), d.get("measured"), d.get("expected"),
                            passed, d.get("detail", ""))
    verdict = d.get("verdict")
    return legacy_check(d.get("quantity", ""), d.get("paper_value"), d.get("measured"), d.get("criterion"),
                        {"reproduced": True, "fail": False}.get(verdict), d.get("detail", ""))


@dataclass(frozen=True)
class Table:
    """A table of the report; ``formats`` per column: text, count, percent, float or int."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    formats: Sequence[str] | None = None

    def __post_init__(self) -> None:
        width = len(self.columns)
        if self.formats is not None and len(self.formats) != width:
            raise ConfigError(f"table {self.title!r}: {len(self.formats)} formats for {width} columns")
        for r in self.rows:
            if len(r) != width:
                raise ConfigError(f"table {self.title!r}: a row has {len(r)} cells, the table {width} columns")

    def to_dict(self) -> dict:
        d = {"title": self.title, "columns": list(self.columns), "rows": [list(r) for r in self.rows]}
        if self.formats is not None:
            d["formats"] = list(self.formats)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Table":
        """The stored table back (the inverse of :meth:`to_dict`)."""
        return cls(d.get("title", ""), d["columns"], d["rows"], d.get("formats"))


# ---- figures -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Series:
    """One line of a line figure; ``y`` may hold None for a missing point."""

    label: str
    x: Sequence[Any]
    y: Sequence[Any]
    style: str = "solid"
    marker: bool = True
    color: str | None = None
    censored: Sequence[str | None] | None = None  # per point: None, "lower" (true value >= y) or "upper"

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise ConfigError(f"series {self.label!r}: x has {len(self.x)} points but y has {len(self.y)}")
        if self.style not in LINE_STYLES:
            raise ConfigError(f"series {self.label!r}: style must be one of {', '.join(LINE_STYLES)}")
        if self.censored is not None and (len(self.censored) != len(self.y)
                                          or any(c not in (None, "lower", "upper") for c in self.censored)):
            raise ConfigError(f"series {self.label!r}: censored must give None, 'lower' or 'upper' for each of the "
                              f"{len(self.y)} points")

    def to_dict(self) -> dict:
        out = {"label": self.label, "x": list(self.x), "y": list(self.y), "style": self.style,
               "marker": self.marker, "color": self.color}
        if self.censored is not None and any(self.censored):
            out["censored"] = list(self.censored)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Series":
        """The stored series back (the inverse of :meth:`to_dict`)."""
        return cls(d["label"], d["x"], d["y"], d.get("style", "solid"), d.get("marker", True), d.get("color"),
                   d.get("censored"))


@dataclass(frozen=True)
class LineFigure:
    file: str
    caption: str
    series: Sequence[Series]
    xlabel: str
    ylabel: str
    title: str = ""
    xscale: str = "linear"
    yscale: str = "linear"
    xticklabels: Sequence[str] | None = None  # categories at x = 0, 1, ...: a categorical axis
    kind = "line"

    def __post_init__(self) -> None:
        check_figure_file(self.file)
        if self.xscale not in AXIS_SCALES or self.yscale not in AXIS_SCALES:
            raise ConfigError(f"figure {self.file}: axis scales must be 'linear' or 'log'")

    def to_dict(self) -> dict:
        out = {"kind": "line", "file": self.file, "caption": self.caption, "title": self.title,
               "xlabel": self.xlabel, "ylabel": self.ylabel, "xscale": self.xscale, "yscale": self.yscale,
               "series": [s.to_dict() for s in self.series]}
        if self.xticklabels is not None:
            out["xticklabels"] = list(self.xticklabels)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "LineFigure":
        """The stored figure back (the inverse of :meth:`to_dict`; a part left out takes its default)."""
        return line_figure(d["file"], d.get("caption", ""), series=[Series.from_dict(s) for s in d.get("series", [])],
                           xlabel=d.get("xlabel", ""), ylabel=d.get("ylabel", ""), title=d.get("title", ""),
                           xscale=d.get("xscale", "linear"), yscale=d.get("yscale", "linear"),
                           xticklabels=d.get("xticklabels"))


@dataclass(frozen=True)
class BarFigure:
    """Grouped bars; ``groups`` = [{"label": str, "values": [...one per category...]}]."""

    file: str
    caption: str
    categories: Sequence[str]
    groups: Sequence[Mapping[str, Any]]
    ylabel: str
    title: str = ""
    yscale: str = "linear"
    kind = "bar"

    def __post_init__(self) -> None:
        check_figure_file(self.file)
        if self.yscale not in AXIS_SCALES:
            raise ConfigError(f"figure {self.file}: axis scales must be 'linear' or 'log'")
        for g in self.groups:
            if len(g["values"]) != len(self.categories):
                raise ConfigError(f"figure {self.file}: group {g['label']!r} needs one value per category")

    def to_dict(self) -> dict:
        return {"kind": "bar", "file": self.file, "caption": self.caption, "title": self.title,
                "ylabel": self.ylabel, "yscale": self.yscale, "categories": list(self.categories),
                "groups": [{"label": label, "values": values} for label, values in self.bars()]}

    def bars(self) -> list[tuple[str, list[Any]]]:
        """(label, values) of each group of bars, one value per category."""
        return [(g["label"], list(g["values"])) for g in self.groups]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BarFigure":
        """The stored figure back (the inverse of :meth:`to_dict`; a part left out takes its default)."""
        return bar_figure(d["file"], d.get("caption", ""), categories=d["categories"], groups=d["groups"],
                          ylabel=d.get("ylabel", ""), title=d.get("title", ""), yscale=d.get("yscale", "linear"))


@dataclass(frozen=True)
class HeatmapPanel:
    """One matrix of a heatmap grid: ``values`` is rows x columns (query x key for attention)."""

    title: str
    values: Sequence[Sequence[Any]]
    xlabels: Sequence[str] | None = None
    ylabels: Sequence[str] | None = None

    def __post_init__(self) -> None:
        rows = len(self.values)
        cols = {len(r) for r in self.values}
        if rows == 0 or len(cols) != 1 or 0 in cols:
            raise ConfigError(f"heatmap panel {self.title!r}: values must be a non-empty rectangular matrix")
        (c,) = cols
        if self.xlabels is not None and len(self.xlabels) != c:
            raise ConfigError(f"heatmap panel {self.title!r}: {len(self.xlabels)} x labels for {c} columns")
        if self.ylabels is not None and len(self.ylabels) != rows:
            raise ConfigError(f"heatmap panel {self.title!r}: {len(self.ylabels)} y labels for {rows} rows")

    def to_dict(self) -> dict:
        return {"title": self.title, "values": [[_plain(v) for v in r] for r in self.values],
                "xlabels": None if self.xlabels is None else [str(x) for x in self.xlabels],
                "ylabels": None if self.ylabels is None else [str(y) for y in self.ylabels]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HeatmapPanel":
        """The stored panel back (the inverse of :meth:`to_dict`)."""
        return cls(d.get("title", ""), d["values"], d.get("xlabels"), d.get("ylabels"))


@dataclass(frozen=True)
class HeatmapFigure:
    """A grid of matrices with one colour scale (see the module docstring for the JSON)."""

    file: str
    caption: str
    panels: Sequence[HeatmapPanel]
    ncols: int
    title: str = ""
    cmap: str = "viridis"
    vmin: float | None = None
    vmax: float | None = None
    colorbar: str = ""
    xlabel: str = ""
    ylabel: str = ""
    kind = "heatmap"

    def __post_init__(self) -> None:
        check_figure_file(self.file)
        if not self.panels:
            raise ConfigError(f"figure {self.file}: a heatmap needs at least one panel")
        if not isinstance(self.ncols, int) or self.ncols < 1:
            raise ConfigError(f"figure {self.file}: ncols must be a positive integer, got {self.ncols!r}")
        if self.cmap not in HEATMAP_CMAPS:
            raise ConfigError(f"figure {self.file}: cmap must be one of {', '.join(HEATMAP_CMAPS)}")

    def to_dict(self) -> dict:
        return {"kind": "heatmap", "file": self.file, "caption": self.caption, "title": self.title,
                "ncols": self.ncols, "cmap": self.cmap, "vmin": self.vmin, "vmax": self.vmax,
                "colorbar": self.colorbar, "xlabel": self.xlabel, "ylabel": self.ylabel,
                "panels": [p.to_dict() for p in self.panels]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HeatmapFigure":
        """The stored figure back (the inverse of :meth:`to_dict`; a part left out takes its default)."""
        return heatmap_figure(d["file"], d.get("caption", ""), ncols=d.get("ncols", 1), title=d.get("title", ""),
                              cmap=d.get("cmap", "viridis"), vmin=d.get("vmin"), vmax=d.get("vmax"),
                              colorbar=d.get("colorbar", ""), xlabel=d.get("xlabel", ""), ylabel=d.get("ylabel", ""),
                              panels=[HeatmapPanel.from_dict(p) for p in d.get("panels", [])])


def _plain(v: Any) -> Any:
    # Store plain floats (tensor/numpy scalars included) rounded to 6 significant digits.
    try:
        return float(f"{float(v):.6g}")
    except (TypeError, ValueError):
        return None


Figure = LineFigure | BarFigure | HeatmapFigure
FIGURE_TYPES = (LineFigure, BarFigure, HeatmapFigure)
FIGURE_KINDS = {"line": LineFigure, "bar": BarFigure, "heatmap": HeatmapFigure}


def figure_from_dict(d: Mapping[str, Any]) -> Figure:
    """A stored figure spec back as its typed figure, by its ``kind`` (a spec without one is a line figure);
    a one-line ConfigError for a kind no figure has."""
    kind = d.get("kind", "line")
    if kind not in FIGURE_KINDS:
        raise ConfigError(f"figure {d.get('file')}: unknown kind {kind!r}; one of {', '.join(FIGURE_KINDS)}")
    return FIGURE_KINDS[kind].from_dict(d)


def check_figure_file(file: str) -> None:
    if not isinstance(file, str) or not FIGURE_FILE.match(file):
        raise ConfigError(f"figure file {file!r} must be a plain name ending in .png (no folders)")


def series(label: str, x: Sequence[Any], y: Sequence[Any], *, style: str = "solid",
           marker: bool = True, color: str | None = None, censored: Sequence[str | None] | None = None) -> Series:
    """One line of a line figure; ``y`` may hold None for a missing point; ``censored`` marks points that are
    bounds (a value at a search limit): "lower" (the true value is at least y) or "upper", drawn as an open
    marker with an arrow towards where the true value lies."""
    return Series(label, list(x), list(y), style, marker, color, None if censored is None else list(censored))


def line_figure(file: str, caption: str, *, series: Sequence[Series], xlabel: str, ylabel: str,
                title: str = "", xscale: str = "linear", yscale: str = "linear",
                xticklabels: Sequence[str] | None = None) -> LineFigure:
    """A line figure; ``xticklabels`` makes x categorical (series at x = 0, 1, ..., one label each)."""
    return LineFigure(file, caption, list(series), xlabel, ylabel, title, xscale, yscale,
                      None if xticklabels is None else list(xticklabels))


def heatmap_panel(title: str, values: Any, *, xlabels: Sequence[str] | None = None,
                  ylabels: Sequence[str] | None = None) -> HeatmapPanel:
    """One panel; ``values`` is a 2-D list, array or tensor (rows x columns)."""
    if hasattr(values, "tolist"):
        values = values.tolist()
    return HeatmapPanel(title, [list(r) for r in values], None if xlabels is None else list(xlabels),
                        None if ylabels is None else list(ylabels))


def heatmap_figure(file: str, caption: str, *, panels: Sequence[HeatmapPanel], ncols: int, title: str = "",
                   cmap: str = "viridis", vmin: float | None = None, vmax: float | None = None,
                   colorbar: str = "", xlabel: str = "", ylabel: str = "") -> HeatmapFigure:
    """A grid of ``panels``, ``ncols`` per row, sharing one colour scale [vmin, vmax]
    (the panels' overall min and max when None)."""
    return HeatmapFigure(file, caption, list(panels), ncols, title, cmap, vmin, vmax, colorbar, xlabel, ylabel)


def bar_figure(file: str, caption: str, *, categories: Sequence[str], groups: Sequence[Mapping[str, Any]],
               ylabel: str, title: str = "", yscale: str = "linear") -> BarFigure:
    return BarFigure(file, caption, list(categories), list(groups), ylabel, title, yscale)


# ---- interactive blocks -------------------------------------------------------------------
VIEWER_KIND = "attention-viewer"


def check_viewer_data(d: Mapping[str, Any]) -> None:
    """Refuse a stored interactive block (:mod:`attnlab.reports.viewer`) that the viewer cannot draw
    (one-line ConfigError)."""
    try:
        n = len(d["tokens"])
        nl, nh = len(d["layers"]), len(d["heads"])
        ok = (d.get("kind") == VIEWER_KIND and len(d["maps"]) == nl == len(d["layer_ids"])
              and nh == len(d["head_ids"])
              and all(len(r) == nh and all(isinstance(x, str) and x.count(",") == n * n - 1 for x in r)
                      for r in d["maps"]) and n > 0 and nl and nh)
    except (KeyError, TypeError) as e:
        raise ConfigError(f"an interactive block lacks {e}; build it with attnlab.reports.viewer.viewer_data") from None
    if not ok:
        raise ConfigError("an interactive block's maps do not match its tokens, layers and heads; build it with "
                          "attnlab.reports.viewer.viewer_data")
    _check_viewer_scores(d.get("scores"), nl, nh)


def _check_viewer_scores(scores: Any, nl: int, nh: int) -> None:
    """An interactive block's optional per-head scores: one ``{"name", "description", "values", "ranks",
    "ranked"}`` per score, values (numbers or null) and ranks (positive integers or null) per kept layer,
    per kept head (blocks without scores are drawn as before)."""
    if scores is None:
        return
    how = "build it with attnlab.reports.viewer.viewer_data(..., scores={name: (L, H) array})"

    def grid(x: Any, ok) -> bool:
        return (isinstance(x, list) and len(x) == nl
                and all(isinstance(r, list) and len(r) == nh and all(v is None or ok(v) for v in r) for r in x))

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    def rank(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    if not isinstance(scores, list):
        raise ConfigError(f"an interactive block's scores must be a list of scores; {how}")
    for s in scores:
        name = s.get("name") if isinstance(s, Mapping) else None
        if not isinstance(name, str) or not name or ";" in name or "=" in name:
            raise ConfigError(f"an interactive block has a score without a usable name (a non-empty string without "
                              f"';' or '='); {how}")
        if not grid(s.get("values"), number) or ("ranks" in s and not grid(s["ranks"], rank)):
            raise ConfigError(f"score {name!r} of an interactive block does not hold one value (and rank) per shown "
                              f"head ({nl} layers x {nh} heads); {how}")
        if not isinstance(s.get("description", ""), str) or not isinstance(s.get("ranked", 0), int):
            raise ConfigError(f"score {name!r} of an interactive block: description must be text, ranked a count; "
                              f"{how}")


# ---- the result --------------------------------------------------------------------------
@dataclass
class ExperimentResult:
    """What an experiment returns; see the module docstring."""

    summary: list[Check] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    interactive: list[dict[str, Any]] = field(default_factory=list)
    deviations: list[Deviation] | None = None

    def __post_init__(self) -> None:
        for name, items, kind in (("summary", self.summary, Check), ("tables", self.tables, Table),
                                  ("figures", self.figures, FIGURE_TYPES)):
            for x in items:
                if not isinstance(x, kind):
                    how = "attnlab.checks (compare, info, ...)" if name == "summary" else f"attnlab.results.{name[:-1]}"
                    raise TypeError(f"ExperimentResult.{name} holds a {type(x).__name__}; build it with {how}")
        if any(not isinstance(n, str) for n in self.notes):
            raise TypeError("ExperimentResult.notes must be strings")
        for block in self.interactive or ():
            check_viewer_data(block)
        if self.deviations is not None:
            if any(not isinstance(d, Deviation) for d in self.deviations):
                raise TypeError("ExperimentResult.deviations holds attnlab.deviations.Deviation records")
            ids = [d.id for d in self.deviations]
            if len(set(ids)) != len(ids):
                raise ConfigError(f"ExperimentResult.deviations: ids must be unique, got {ids}")
        named = {i for c in self.summary for i in c.deviations}
        unknown = named - {d.id for d in self.deviations or ()}
        if unknown:
            raise ConfigError(f"summary rows name deviations {sorted(unknown)} that ExperimentResult.deviations does "
                              "not list; add them there (attnlab.deviations.Deviation)")
        try:  # storable: results.json holds all of it as JSON
            to_jsonable(self.to_dict())
        except TypeError as e:
            raise TypeError(f"ExperimentResult cannot be stored as JSON ({e}); give plain numbers, lists, dicts, "
                            "arrays, or objects with to_dict()") from None

    @property
    def verdicts(self) -> dict[str, int]:
        """How many summary lines have each verdict (:func:`attnlab.checks.count_verdicts`)."""
        return count_verdicts(c.verdict for c in self.summary)

    def check(self, quantity_prefix: str) -> Check:
        """The one summary line whose quantity starts with ``quantity_prefix`` (KeyError otherwise)."""
        hits = [c for c in self.summary if c.quantity.startswith(quantity_prefix)]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} summary lines start with {quantity_prefix!r}")
        return hits[0]

    def to_dict(self) -> dict:
        """The stored form (results.json); empty parts are left out."""
        d: dict[str, Any] = {}
        if self.summary:
            d["summary"] = [c.to_dict() for c in self.summary]
        if self.tables:
            d["tables"] = [t.to_dict() for t in self.tables]
        if self.figures:
            d["figures"] = [f.to_dict() for f in self.figures]
        if self.data:
            d["data"] = self.data
        if self.notes:
            d["notes"] = list(self.notes)
        if self.scalars:
            d["scalars"] = dict(self.scalars)
        if self.interactive:
            d["interactive"] = [dict(b) for b in self.interactive]
        if self.deviations is not None:
            d["deviations"] = [x.to_dict() for x in self.deviations]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ExperimentResult":
        """Read a stored result back (figures come back typed as well)."""
        return cls(summary=[check_from_dict(c) for c in d.get("summary", [])],
                   tables=[Table.from_dict(t) for t in d.get("tables", [])],
                   figures=[figure_from_dict(f) for f in d.get("figures", [])], notes=list(d.get("notes", [])),
                   data=dict(d.get("data", {})), scalars=dict(d.get("scalars", {})),
                   interactive=[dict(b) for b in d.get("interactive", [])],
                   deviations=None if d.get("deviations") is None else [Deviation.from_dict(x)
                                                                         for x in d["deviations"]])
