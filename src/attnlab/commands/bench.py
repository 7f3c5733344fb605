"""`attnlab bench`'s output: the directory checked before any timing, bench.json with its figure,
and the tables printed."""

from __future__ import annotations

import json

from rich.markup import escape

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
    """The timings, the crossovers and the targets as tables on ``console``."""
    ceiling = result["ceiling"]
    env = result["env"]
    rows = []
    for r in result["rows"]:
        if r["status"] != "ok":
            rows.append([escape(r["variant"]), str(r["n"]), f"[dim]{r['status']}[/]", "", "", "", "", ""])
            continue
        ratio = f"{r['ratio']:.3g}x vs {r['reference']}" if r["ratio"] and r["variant"] != r["reference"] else (
            "-" if not r["ratio"] else "1")
        rows.append([escape(r["variant"]), str(r["n"]), f"{r['time_ms']:.3g}", f"{r['q3_ms'] - r['q1_ms']:.2g}",
                     f"{r['gflops']:.3g}", f"{r['pct_ceiling']:.3g}", fmt(r["peak_mb"]), escape(ratio)])
    print_table(console, f"attnlab bench ({env.get('device', 'cpu')}: {env.get('device_name', '')}, "
                         f"{result['config']['dtype']}, {env['threads']} threads, matmul ceiling "
                         f"{ceiling['gflops']:.1f} GFLOP/s, load {env['load_average_1m']:.2f})",
                [Col("variant", "key"), Col("n", "number"), Col("time ms", "number"), Col("IQR ms", "number"),
                 Col("GFLOP/s", "number"), Col("% ceiling", "number"), Col("peak MB", "number"),
                 Col("vs reference", "number")], rows, keys=2)
    notes = {(r["variant"], r["note"]) for r in result["rows"] if r["status"] != "ok"}
    for name, note in sorted(notes):
        console.print(f"  {name}: {note}", highlight=False, markup=False, soft_wrap=True)
    print_table(console, "crossover n vs fused SDPA (time ratio passes 1)",
                [Col("variant", "key"), Col("crossover n", "number"), Col("status")],
                [[escape(name), fmt(round(x["crossover_n"])) if x["crossover_n"] else "-", escape(x["status"])]
                 for name, x in result["crossovers"].items()])
    print_table(console, "targets", [Col("target"), Col("measured", "number"), Col("limit", "number"),
                                     Col("status", "number"), Col("detail")],
                [[escape(x["statement"]), fmt(x["measured"]), f"{x['relation']} {x['limit']:g}",
                  {"pass": "[green]pass[/]", "FAIL": "[red]FAIL[/]"}.get(x["status"], escape(x["status"])),
                  escape(x["detail"])] for x in result["targets"]])
