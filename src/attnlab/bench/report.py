"""Figure specs of a benchmark result (drawn by attnlab.reports.figures), shared by
``attnlab bench --out``, the attention-speed experiment and benchmarks/bench_attention.py.

Both figures are typed :class:`attnlab.results.LineFigure` specs, log-log against n,
one series per variant: dashed for the O(n^2) variants, solid for the O(n) ones.
``render(spec, folder)`` of :mod:`attnlab.reports.figures` draws them; an experiment
stores them in its :class:`attnlab.results.ExperimentResult` as they are.
"""

from __future__ import annotations

from attnlab.results import PALETTE, LineFigure, Series, line_figure, series

_STYLE = {"linear": "solid", "quadratic": "dashed"}


def _lines(rows: list[dict], key: str) -> list[Series]:
    """One series per variant (in the order of first appearance): ``key`` against n over its ok rows."""
    out = []
    names = list(dict.fromkeys(r["variant"] for r in rows))
    for i, name in enumerate(names):
        ok = [r for r in rows if r["variant"] == name and r["status"] == "ok" and r[key]]
        if not ok:
            continue
        out.append(series(name, [r["n"] for r in ok], [r[key] for r in ok], style=_STYLE[ok[0]["order"]],
                          color=PALETTE[i % len(PALETTE)] if i < len(PALETTE) else None))
    return out


def time_figure(rows: list[dict], file: str = "attention-time.png", caption: str | None = None) -> LineFigure:
    """Median forward time (ms) of every variant against n, from the rows of a bench result."""
    return line_figure(
        file, caption or "Forward time of each attention variant against n (B=1, H=8, d_head=64; median); "
        "dashed: O(n^2) variants, solid: O(n) variants.",
        series=_lines(rows, "time_ms"), xlabel="n (tokens)", ylabel="time (ms)", xscale="log", yscale="log",
        title="Attention forward time")


def memory_figure(rows: list[dict], file: str = "attention-memory.png", caption: str | None = None) -> LineFigure:
    """Peak memory (MiB) of one forward above its inputs, every variant against n."""
    return line_figure(
        file, caption or "Peak memory of one forward above its inputs (resident-set high-water mark) against n; "
        "dashed: O(n^2) variants, solid: O(n) variants.",
        series=_lines(rows, "peak_mb"), xlabel="n (tokens)", ylabel="peak memory (MiB)", xscale="log",
        yscale="log", title="Attention forward peak memory")
