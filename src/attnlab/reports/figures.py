"""Drawing the figure specs an experiment stored (:mod:`attnlab.results`) into PNGs.

An experiment never draws: it stores figure specs among its results. The report
renders each spec with matplotlib (Agg backend, no display needed) into
``<run>/figures/<file>`` and returns the PNG as base64 for inlining, so a report
can always be rebuilt from ``results.json`` alone. The spec schema is in
:mod:`attnlab.results`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import base64
import io
import math
from dataclasses import dataclass
from pathlib import Path

from attnlab.results import (FIGURE_TYPES, PALETTE, BarFigure, Figure, HeatmapFigure, LineFigure, check_figure_file,
                             figure_from_dict)

_STYLES = {"solid": "-", "dashed": "--", "dotted": ":", "dashdot": "-.", "points": "none"}


# Where report.html shows a figure (:func:`spans_row`): a heatmap of several panels spans the row, every
# other figure takes half of it in a wide window and the whole row below 1000 px. Each figure is drawn
# so that its smallest text is at least LEGIBLE_PX CSS pixels at the narrowest width it gets there.
ROW_PX = 720  # a row of the page in a window 800 px wide
HALF_PX = 430  # half a row in a window 1000 px wide (two figures side by side)
LEGIBLE_PX = 9.5  # the layout check asks for 9 px; half a pixel for rounding
MIN_TEXT_PT = 10  # the smallest text of a line or bar figure (6.4 in wide: 9.5 px at HALF_PX)


@dataclass(frozen=True)
class RenderedFigure:
    """A drawn figure: the PNG's path, its caption and title, the PNG as base64, its size in pixels and
    the height of its smallest text in the PNG's pixels (``text_px``): shown ``w`` CSS pixels wide, that
    text is ``text_px * w / size_px[0]`` pixels high."""

    path: Path  # figures/<file> inside the run directory
    caption: str
    title: str
    png_base64: str
    size_px: tuple[int, int] = (0, 0)
    text_px: float = 0.0

    def legible_width(self, px: float = 9.0) -> int:
        """The narrowest width (CSS pixels) at which the figure's smallest text is still ``px`` high."""
        return math.ceil(self.size_px[0] * px / self.text_px) if self.text_px else 0


def stored_figure(spec: Figure | Mapping[str, Any]) -> Figure:
    """The figure as results.json stores it, typed: a stored spec read back, a typed figure through its stored
    form (so that it is drawn as a report rebuilt from results.json draws it: heatmap values to 6 digits)."""
    return figure_from_dict(spec.to_dict() if isinstance(spec, FIGURE_TYPES) else spec)


def spans_row(spec: Figure | Mapping[str, Any]) -> bool:
    """A heatmap of several panels spans the report's row: its panels need the width to be read."""
    fig = spec if isinstance(spec, FIGURE_TYPES) else stored_figure(spec)
    return isinstance(fig, HeatmapFigure) and len(fig.panels) > 1


def render(spec: Figure | Mapping[str, Any], figures_dir: Path, *, name: str | None = None) -> RenderedFigure:
    """Draw ``spec`` (stored JSON, or a typed figure: :func:`stored_figure`) into ``figures_dir/(name or its
    file)`` (atomically) and return it."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from attnlab.runs.rundir import atomic_write_bytes

    spec = stored_figure(spec)
    if isinstance(spec, HeatmapFigure):
        fig = _draw_heatmap(plt, spec)
    else:
        with plt.rc_context(_TEXT_SIZES):
            fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110, layout="constrained")
            if isinstance(spec, BarFigure):
                _draw_bar(ax, spec)
            else:
                _draw_line(ax, spec)
            _style_axes(ax, spec)
    try:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=fig.dpi)  # a heatmap's own dpi (savefig's default: the first one)
        text_px = _smallest_text(fig) * fig.dpi / 72
    finally:
        plt.close(fig)
    data = buf.getvalue()
    figures_dir.mkdir(parents=True, exist_ok=True)
    name = name or spec.file
    check_figure_file(name)
    path = figures_dir / name
    atomic_write_bytes(path, data)
    return RenderedFigure(path, spec.caption, spec.title, base64.b64encode(data).decode("ascii"), _png_size(data),
                          text_px)


def _smallest_text(fig: Any) -> float:
    """The font size (points) of the smallest visible, non-empty text of the drawn ``fig``."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=0.0)


def _png_size(data: bytes) -> tuple[int, int]:
    """(width, height) in pixels, from the PNG's IHDR chunk."""
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


# Every text of a line or bar figure, whatever the local matplotlibrc says (see MIN_TEXT_PT).
_TEXT_SIZES = {"font.size": MIN_TEXT_PT, "axes.labelsize": MIN_TEXT_PT, "xtick.labelsize": MIN_TEXT_PT,
               "ytick.labelsize": MIN_TEXT_PT, "legend.fontsize": MIN_TEXT_PT, "axes.titlesize": 11}


def _num(v: Any) -> float:
    # Stored JSON uses None (and "nan"/"inf" strings) for missing points.
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


MARKERS = ("o", "s", "^", "D", "v", "P", "X")  # 7 markers against 8 colours: 56 distinct pairs
LEGEND_INSIDE = 4  # more series than this: the legend goes outside the axes, never over the data
MAX_BAR_LABELS = 14  # category labels a 6.4-inch bar figure shows before they would overlap


def series_style(i: int) -> tuple[str, str]:
    """(colour, marker) of the i-th series: every series of a figure looks different for i < 56 (colour
    i mod 8 with marker i mod 7, coprime cycles); the line style stays the series' own (it carries
    meaning, e.g. O(n^2) dashed against O(n) solid)."""
    return PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]


def _draw_line(ax: Any, spec: LineFigure) -> None:
    log_y = spec.yscale == "log"
    for i, s in enumerate(spec.series):
        y = [_num(v) for v in s.y]
        if log_y:  # zeros (an exactly one-hot softmax) cannot sit on a log axis
            y = [v if v > 0 else math.nan for v in y]
        colour, marker = series_style(i)
        colour = s.color or colour
        xs = [_num(v) for v in s.x]
        ax.plot(xs, y, linestyle=_STYLES.get(s.style or "solid", "-"), marker=marker if s.marker else None,
                markersize=4, linewidth=1.6, color=colour, label=s.label)
        _draw_bounds(ax, xs, y, s.censored, colour, marker)
    ax.set_xscale(spec.xscale)
    ax.set_yscale(spec.yscale)
    ax.set_xlabel(spec.xlabel)
    if spec.xticklabels:
        labels = spec.xticklabels
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.minorticks_off()


def _draw_bounds(ax: Any, xs: Sequence[float], ys: Sequence[float], censored: Sequence[Any] | None, colour: str,
                 marker: str) -> None:
    """Censored points (a value at a search limit) as bounds: an open marker with an arrow towards the
    side the true value lies on (up for a lower bound)."""
    if not censored:
        return
    for x, y, c in zip(xs, ys, censored):
        if c is None or not (math.isfinite(x) and math.isfinite(y)):
            continue
        ax.plot([x], [y], marker=marker, markersize=8, markerfacecolor="white", markeredgecolor=colour,
                markeredgewidth=1.5, linestyle="none", zorder=4)
        ax.annotate("", xy=(x, y), xytext=(0, 18 if c == "lower" else -18), textcoords="offset points",
                    arrowprops={"arrowstyle": "<-", "color": colour, "linewidth": 1.4}, zorder=4)


def _draw_bar(ax: Any, spec: BarFigure) -> None:
    cats, groups = spec.categories, spec.bars()
    width = 0.8 / max(len(groups), 1)
    for i, (label, values) in enumerate(groups):
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(cats))]
        vals = [_num(v) for v in values]
        ax.bar(xs, [0 if math.isnan(v) else v for v in vals], width * 0.92,
               color=PALETTE[i % len(PALETTE)], label=label)
    step = max(1, math.ceil(len(cats) / MAX_BAR_LABELS))  # many bins: label every step-th, never overlapping
    ax.set_xticks(range(0, len(cats), step), cats[::step], rotation=20 if len(cats) <= 8 else 45, ha="right")
    ax.set_yscale(spec.yscale)


_PT = 1 / 72  # inches per point
_PAD = 3 * _PT  # the gap between neighbouring decorations (matplotlib's constrained-layout pad)


def _draw_heatmap(plt: Any, spec: HeatmapFigure) -> Any:
    """A grid of panels with one shared colour scale and one colour bar.

    Panels without tick labels are as small as keeps the figure's text legible where the
    report shows it (:func:`_panel_side`: about 0.5 in each for a 12 x 6 grid of attention
    maps, drawn at a higher dpi); a panel with tick labels gets 0.16 in per label so that
    every token can be read.

    The layout is computed here, not by matplotlib's constrained layout (which measures
    every axis of every panel twice, about a second for a 72-panel grid): every panel
    gets the same cell, whose margins hold the widest tick labels, title and axis
    label of any panel, measured once with the figure's renderer.
    """
    import numpy as np

    panels = spec.panels
    ncols = max(1, min(int(spec.ncols), len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    mats = [np.array([[_num(v) for v in r] for r in p.values], dtype=float) for p in panels]
    finite = np.concatenate([m[np.isfinite(m)] for m in mats]) if mats else np.zeros(1)
    vmin = _num(spec.vmin) if spec.vmin is not None else float(finite.min(initial=0.0))
    vmax = _num(spec.vmax) if spec.vmax is not None else float(finite.max(initial=1.0))
    labelled = any(p.xlabels or p.ylabels for p in panels)
    fig = plt.figure(figsize=(1.0, 1.0), dpi=110)  # sized below, once the panel titles are measured
    renderer = fig.canvas.get_renderer()
    title_size = 7 if not labelled else 10

    def extent(texts, size: float, rotation: float = 0.0) -> tuple[float, float]:
        """The widest and tallest of ``texts`` at ``size`` points, in inches."""
        w = h = 0.0
        for t in dict.fromkeys(texts):
            b = fig.text(0, 0, t, fontsize=size, rotation=rotation).get_window_extent(renderer)
            w, h = max(w, b.width / fig.dpi), max(h, b.height / fig.dpi)
        fig.texts.clear()
        return w, h

    # panel titles wrap at spaces to the panel's width; a panel is never narrower than a title's longest word
    words = [w for p in panels for w in _wrap(p.title, 0.0, lambda t: 1.0).split("\n")]
    side = _panel_side(spec, mats, ncols, extent(words, title_size)[0] if words else 0.0)
    titles = [_wrap(p.title, side - 4 * _PAD, lambda t: extent([t], title_size)[0]) for p in panels]
    top = extent(titles, title_size)[1] + 2 * _PT if any(titles) else 0.0
    width, height = side * ncols + 1.2, (side + top) * nrows + 0.6 + 0.4 * bool(spec.title)
    # a grid that spans the row is drawn >= 1600 px wide: each panel keeps the pixels of its map
    fig.set_size_inches(width, height)
    fig.set_dpi(max(110.0, 1600 / width) if spans_row(spec) else 110.0)
    renderer = fig.canvas.get_renderer()  # measures at the new dpi
    tick = 3.5 * _PT + 3.5 * _PT  # major tick length + tick label pad
    ylabels = [t for p in panels for t in (p.ylabels or [])]
    xlabels = [t for p in panels for t in (p.xlabels or [])]
    left = (extent(ylabels, 7)[0] + tick) if ylabels else 0.0
    bottom = (extent(xlabels, 7, 90)[1] + tick) if xlabels else 0.0
    if spec.ylabel:
        left += extent([spec.ylabel], 8, 90)[0] + 4 * _PT
    if spec.xlabel:
        bottom += extent([spec.xlabel], 8)[1] + 4 * _PT
    head = extent([spec.title], 11)[1] + 2 * _PT if spec.title else 0.0
    # the colour bar: shrink x the grid's height, 1/20 of that wide, its tick labels and label to the right
    bar = 0.0
    shrink = 0.6 if nrows > 1 else 0.9
    ticks = [f"{v:.1f}" for v in np.linspace(vmin, vmax, 6)] if math.isfinite(vmin + vmax) else ["0.0"]
    bar_text = extent(ticks, 7)[0] + tick + (extent([spec.colorbar], 8, 90)[0] + 4 * _PT if spec.colorbar else 0.0)
    grid_h = height - head - 2 * _PAD
    cell_h = grid_h / nrows
    ax_h = max(cell_h - top - bottom - _PAD, 0.05)
    bar_len = shrink * (nrows * cell_h - top - bottom - _PAD)
    bar = 0.01 * width + bar_len / 20 + bar_text + _PAD
    cell_w = (width - 2 * _PAD - bar) / ncols
    ax_w = max(cell_w - left - _PAD, 0.05)
    x0, y_top = _PAD, height - _PAD - head
    image = None
    for k, p in enumerate(panels):
        r, c = divmod(k, ncols)
        x = x0 + c * cell_w + left
        y = y_top - r * cell_h - top - ax_h
        ax = fig.add_axes((x / width, y / height, ax_w / width, ax_h / height))
        m = mats[k]
        image = ax.imshow(m, cmap=spec.cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
        ax.set_title(titles[k], fontsize=title_size, pad=2)
        if p.xlabels:
            ax.set_xticks(range(m.shape[1]), p.xlabels, rotation=90, fontsize=7)
        else:
            ax.set_xticks([])
        if p.ylabels:
            ax.set_yticks(range(m.shape[0]), p.ylabels, fontsize=7)
        else:
            ax.set_yticks([])
        if r == nrows - 1 and spec.xlabel:
            ax.set_xlabel(spec.xlabel, fontsize=8)
        if c == 0 and spec.ylabel:
            ax.set_ylabel(spec.ylabel, fontsize=8)
    if image is not None:
        grid_top, grid_bottom = y_top - top, y_top - nrows * cell_h + bottom + _PAD
        middle = (grid_top + grid_bottom) / 2
        bx = x0 + ncols * cell_w + 0.01 * width
        cax = fig.add_axes((bx / width, (middle - bar_len / 2) / height, bar_len / 20 / width, bar_len / height))
        cb = fig.colorbar(image, cax=cax)
        cb.set_label(spec.colorbar, fontsize=8)
        cb.ax.tick_params(labelsize=7)
    if spec.title:
        fig.suptitle(spec.title, fontsize=11, y=1 - _PAD / height, va="top")
    return fig


HEATMAP_TEXT_PT = 7  # tick labels, and the titles of unlabelled panels: the smallest text of a heatmap
LABEL_SLOT = 0.16  # inches per tick label of a labelled panel (a 7 pt token with room around it)


def _panel_side(spec: HeatmapFigure, mats: Sequence[Any], ncols: int, word_width: float) -> float:
    """The side (inches) of one panel: a labelled panel gets :data:`LABEL_SLOT` per label (2 in at least);
    unlabelled panels are as large as lets the figure's 7 pt text stay :data:`LEGIBLE_PX` high where
    the report shows it (:data:`ROW_PX` for a grid that spans the row, :data:`HALF_PX` otherwise) -
    1.25 in at most, and never narrower than the longest word of a title (``word_width``, inches)."""
    if any(p.xlabels or p.ylabels for p in spec.panels):
        return max(2.0, LABEL_SLOT * max(max(m.shape) for m in mats))
    shown = ROW_PX if spans_row(spec) else HALF_PX
    fits = HEATMAP_TEXT_PT * shown / (72 * LEGIBLE_PX)  # the widest figure (in) whose 7 pt text is legible
    largest = 1.25 if len(spec.panels) > 1 else 4.0
    return max(min(largest, (fits - 1.2) / ncols), word_width + 4 * _PAD)


def _wrap(title: str, width: float, measure: Callable[[str], float]) -> str:
    """``title`` broken at spaces into lines no wider than ``width`` (inches, as ``measure`` gives them);
    a word of one or two characters stays with the next ("d 12.4", "(w ≤ 3)") unless it ends a clause."""
    words: list[str] = []
    for word in title.split():
        if words and len(words[-1].rsplit(" ", 1)[-1]) <= 2 and words[-1][-1] not in ":;,.":
            words[-1] += f" {word}"
        else:
            words.append(word)
    lines: list[str] = []
    for word in words:
        if lines and measure(f"{lines[-1]} {word}") <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return "\n".join(lines)


def _style_axes(ax: Any, spec: LineFigure | BarFigure) -> None:
    ax.set_ylabel(spec.ylabel)
    if spec.title:
        ax.set_title(spec.title, fontsize=11)
    ax.grid(True, which="major", color="#d9dde3", linewidth=0.7)
    ax.grid(True, which="minor", color="#eef0f3", linewidth=0.5)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    handles = ax.get_legend_handles_labels()[0]
    if isinstance(spec, BarFigure) and len(spec.groups) == 1:
        return  # one group of bars: the axis label says what they are, a legend would repeat it
    if handles and len(handles) > LEGEND_INSIDE:  # beside the axes, outside the data
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    elif handles:
        ax.legend(frameon=False)
