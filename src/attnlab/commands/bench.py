"""`attnlab bench`'s output: the directory checked before any timing, bench.json with its figure,
and the tables printed."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape

from attnlab.bench.stability import NOISY
from attnlab.terminal import Col, fmt, print_table


def bench_out_dir(out: str | None):
    """--out checked before any timing: results must never be lost to an unwritable directory."""
    from attnlab.runs.rundir import writable_dir

    return None if out is None else writable_dir(out)


def write_bench(out_dir, result: dict) -> None:
    """bench.json and bench-time.png in out_dir."""
    from attnlab.bench.report import time_figure
    from attnlab.reports.figures import render
    from attnlab.runs.rundir import atomic_write_bytes

    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out_dir / "bench.json", (json.dumps(result, indent=2) + "\n").encode())
    render(time_figure(result["rows"], "bench-time.png"), out_dir)


def print_bench(console, result: dict) -> None:
    """The timings, the crossovers and the targets as tables on ``console``, each fitting its width."""
    ceiling = result["ceiling"]
    env = result["env"]
    # quartiles need two repeats: with one, the IQR column is left out rather than printed as 0
    spread = any(r["q1_ms"] is not None for r in result["rows"] if r["status"] == "ok")
    rows = []
    for r in result["rows"]:
        if r["status"] != "ok":
            rows.append([escape(r["variant"]), str(r["n"]), f"[dim]{r['status']}[/]", *[""] * (5 + spread)])
            continue
        ratio = f"{r['ratio']:.3g}x vs {r['reference']}" if r["ratio"] and r["variant"] != r["reference"] else (
            "-" if not r["ratio"] else "1")
        iqr = [fmt(r["q3_ms"] - r["q1_ms"]) if r["q1_ms"] is not None else "-"] if spread else []
        rows.append([escape(r["variant"]), str(r["n"]), f"{r['time_ms']:.3g}", *iqr,
                     f"{r['gflops']:.3g}", f"{r['pct_ceiling']:.3g}", fmt(r["peak_mb"]), escape(ratio)])
    print_table(console, f"attnlab bench ({env.get('device', 'cpu')}: {env.get('device_name', '')}, "
                         f"{result['config']['dtype']}, {env['threads']} threads, matmul ceiling "
                         f"{ceiling['gflops']:.1f} GFLOP/s, load {env['load_average_1m']:.2f})",
                [Col("variant", "key"), Col("n", "number"), Col("time ms", "number"),
                 *([Col("IQR ms", "number")] if spread else []),
                 Col("GFLOP/s", "number"), Col("% ceiling", "number"), Col("peak MB", "number"),
                 Col("vs reference", "number")], rows, keys=2)
    if not spread:
        say_wrapped(console, "IQR ms: n/a (1 repeat: no spread is known; --repeats 3 or more gives one)")
    for name, note in sorted({(r["variant"], r["note"]) for r in result["rows"] if r["status"] != "ok"}):
        say_wrapped(console, f"{name}: {note}")
    print_table(console, "crossover n vs fused SDPA (time ratio passes 1)",
                [Col("variant", "key"), Col("crossover n", "number"), Col("status")],
                [[escape(name), fmt(round(x["crossover_n"])) if x["crossover_n"] else "-", escape(x["status"])]
                 for name, x in result["crossovers"].items()])
    targets = result["targets"]
    print_table(console, "targets", [Col("target"), Col("measured", "number"), Col("limit", "number"),
                                     Col("status", "text", min_width=len("inconclusive:")),
                                     Col("detail", min_width=longest_name(t["detail"] for t in targets))],
                [[escape(x["statement"]), fmt(x["measured"]), f"{x['relation']} {x['limit']:g}",
                  STATUS_STYLE.get(x["status"], escape(x["status"])), escape(x["detail"])] for x in targets])


STATUS_STYLE = {"pass": "[green]pass[/]", "FAIL": "[red]FAIL[/]", NOISY: f"[yellow]{NOISY}[/]"}


def longest_name(texts: Iterable[str]) -> int:
    """The longest word in ``texts``, punctuation included (a detail column never narrower, so no variant
    name splits)."""
    return max((len(word) for t in texts for word in t.split()), default=0)


def say_wrapped(console: Console, line: str) -> None:
    """``line`` (plain text) indented by two, folded at the console's width with its further lines indented
    by four, breaking only at spaces (a variant name or a number never splits)."""
    text = textwrap.fill(line, width=max(console.width, 20), initial_indent="  ", subsequent_indent="    ",
                         break_long_words=False, break_on_hyphens=False)
    console.print(text, highlight=False, markup=False, emoji=False, soft_wrap=True)
