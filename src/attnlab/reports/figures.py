"""Figures from stored numbers: specs that experiments store, PNGs that reports draw.

An experiment never draws: it stores a *figure spec* (plain JSON, built with
:func:`line_figure` / :func:`bar_figure`) among its results. The report renders
each spec with matplotlib (Agg backend, no display needed) into
``<run>/figures/<file>`` and returns the PNG as base64 for inlining, so a report
can always be rebuilt from ``results.json`` alone.

Spec schema::

    {"kind": "line", "file": "name.png", "caption": str, "title": str,
     "xlabel": str, "ylabel": str, "xscale": "linear"|"log", "yscale": ...,
     "series": [{"label": str, "x": [...], "y": [...], "style": "solid"|"dashed"|"dotted",
                 "marker": bool}]}
    {"kind": "bar", "file": ..., "caption": ..., "title": ..., "ylabel": ..., "yscale": ...,
     "categories": [str], "groups": [{"label": str, "values": [number|None]}]}
"""

from __future__ import annotations

import base64
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from attnlab.errors import ConfigError

_FILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\.png$")
_SCALES = ("linear", "log")
_STYLES = {"solid": "-", "dashed": "--", "dotted": ":", "dashdot": "-."}
# A colour-blind-safe palette (Okabe-Ito), in a fixed order so figures are stable.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


def series(label: str, x: Sequence[float], y: Sequence[float], *, style: str = "solid",
           marker: bool = True, color: str | None = None) -> dict:
    """One line of a line figure; ``y`` may hold None for a missing point."""
    if len(x) != len(y):
        raise ConfigError(f"series {label!r}: x has {len(x)} points but y has {len(y)}")
    if style not in _STYLES:
        raise ConfigError(f"series {label!r}: style must be one of {', '.join(_STYLES)}")
    return {"label": label, "x": list(x), "y": list(y), "style": style, "marker": marker, "color": color}


def line_figure(file: str, caption: str, *, series: list[dict], xlabel: str, ylabel: str,
                title: str = "", xscale: str = "linear", yscale: str = "linear") -> dict:
    _check_file(file)
    if xscale not in _SCALES or yscale not in _SCALES:
        raise ConfigError(f"figure {file}: axis scales must be 'linear' or 'log'")
    return {"kind": "line", "file": file, "caption": caption, "title": title, "xlabel": xlabel,
            "ylabel": ylabel, "xscale": xscale, "yscale": yscale, "series": series}


def bar_figure(file: str, caption: str, *, categories: list[str], groups: list[dict],
               ylabel: str, title: str = "", yscale: str = "linear") -> dict:
    """Grouped bars; ``groups`` = [{"label": str, "values": [...one per category...]}]."""
    _check_file(file)
    for g in groups:
        if len(g["values"]) != len(categories):
            raise ConfigError(f"figure {file}: group {g['label']!r} needs one value per category")
    return {"kind": "bar", "file": file, "caption": caption, "title": title, "ylabel": ylabel,
            "yscale": yscale, "categories": list(categories), "groups": groups}


def _check_file(file: str) -> None:
    if not _FILE_RE.match(file):
        raise ConfigError(f"figure file {file!r} must be a plain name ending in .png (no folders)")


@dataclass(frozen=True)
class RenderedFigure:
    path: Path  # figures/<file> inside the run directory
    caption: str
    title: str
    png_base64: str


def render(spec: dict, figures_dir: Path, *, name: str | None = None) -> RenderedFigure:
    """Draw ``spec`` into ``figures_dir/(name or spec['file'])`` (atomically) and return it."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from attnlab.reports.rundir import atomic_write_bytes

    _check_file(spec.get("file", ""))
    drawers = {"line": _draw_line, "bar": _draw_bar}
    if spec.get("kind") not in drawers:
        raise ConfigError(f"figure {spec['file']}: unknown kind {spec.get('kind')!r}")
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110, layout="constrained")
    try:
        drawers[spec["kind"]](ax, spec)
        _style_axes(ax, spec)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    data = buf.getvalue()
    figures_dir.mkdir(parents=True, exist_ok=True)
    name = name or spec["file"]
    _check_file(name)
    path = figures_dir / name
    atomic_write_bytes(path, data)
    return RenderedFigure(path, spec.get("caption", ""), spec.get("title", ""),
                          base64.b64encode(data).decode("ascii"))


def _num(v) -> float:
    # Stored JSON uses None (and "nan"/"inf" strings) for missing points.
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def _draw_line(ax, spec: dict) -> None:
    log_y = spec.get("yscale") == "log"
    for i, s in enumerate(spec["series"]):
        y = [_num(v) for v in s["y"]]
        if log_y:  # zeros (an exactly one-hot softmax) cannot sit on a log axis
            y = [v if v > 0 else math.nan for v in y]
        ax.plot([_num(v) for v in s["x"]], y, _STYLES.get(s.get("style", "solid"), "-"),
                marker="o" if s.get("marker", True) else None, markersize=3.5, linewidth=1.6,
                color=s.get("color") or PALETTE[i % len(PALETTE)], label=s["label"])
    ax.set_xscale(spec.get("xscale", "linear"))
    ax.set_yscale(spec.get("yscale", "linear"))
    ax.set_xlabel(spec.get("xlabel", ""))


def _draw_bar(ax, spec: dict) -> None:
    cats, groups = spec["categories"], spec["groups"]
    width = 0.8 / max(len(groups), 1)
    for i, g in enumerate(groups):
        xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(cats))]
        vals = [_num(v) for v in g["values"]]
        ax.bar(xs, [0 if math.isnan(v) else v for v in vals], width * 0.92,
               color=PALETTE[i % len(PALETTE)], label=g["label"])
    ax.set_xticks(range(len(cats)), cats, rotation=20, ha="right")
    ax.set_yscale(spec.get("yscale", "linear"))


def _style_axes(ax, spec: dict) -> None:
    ax.set_ylabel(spec.get("ylabel", ""))
    if spec.get("title"):
        ax.set_title(spec["title"], fontsize=11)
    ax.grid(True, which="major", color="#d9dde3", linewidth=0.7)
    ax.grid(True, which="minor", color="#eef0f3", linewidth=0.5)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, frameon=False)
