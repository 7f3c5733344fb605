"""Figure specs of a benchmark result (drawn by attnlab.reports.figures), shared by
``attnlab bench --out``, the attention-speed experiment and benchmarks/bench_attention.py."""

from __future__ import annotations

from attnlab.results import PALETTE, line_figure, series

_STYLE = {"linear": "solid", "quadratic": "dashed"}


def _lines(rows: list[dict], key: str) -> list[dict]:
    out = []
    names = list(dict.fromkeys(r["variant"] for r in rows))
    for i, name in enumerate(names):
        ok = [r for r in rows if r["variant"] == name and r["status"] == "ok" and r[key]]
        if not ok:
            continue
        out.append(series(name, [r["n"] for r in ok], [r[key] for r in ok], style=_STYLE[ok[0]["order"]],
                          color=PALETTE[i % len(PALETTE)] if i < len(PALETTE) else None))
    return out


def time_figure(rows: list[dict], file: str = "attention-time.png", caption: str | None = None) -> dict:
    return line_figure(
        file, caption or "Forward time of each attention variant against n (B=1, H=8, d_head=64; median); "
        "dashed: O(n^2) variants, solid: O(n) variants.",
        series=_lines(rows, "time_ms"), xlabel="n (tokens)", ylabel="time (ms)", xscale="log", yscale="log",
        title="Attention forward time")


def memory_figure(rows: list[dict], file: str = "attention-memory.png", caption: str | None = None) -> dict:
    return line_figure(
        file, caption or "Peak memory of one forward above its inputs (resident-set high-water mark) against n; "
        "dashed: O(n^2) variants, solid: O(n) variants.",
        series=_lines(rows, "peak_mb"), xlabel="n (tokens)", ylabel="peak memory (MiB)", xscale="log",
        yscale="log", title="Attention forward peak memory")
