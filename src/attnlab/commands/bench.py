"""`attnlab bench`'s output: the directory checked before any timing, bench.json with its figure,
and the tables printed."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.markup import escape

from attnlab.bench.record import BenchRecord
from attnlab.bench.stability import NOISY
from attnlab.terminal import Col, fmt, print_table


def bench_out_dir(out: str | None):
    """--out checked before any timing: results must never be lost to an unwritable directory."""
    from attnlab.runs.rundir import writable_dir

    return None if out is None else writable_dir(out)


@dataclass(frozen=True)
class BenchOptions:
    """`attnlab bench`'s options: the sequence lengths (text, e.g. "512,1024"; None: the preset), the
    variants (None: all), dtype, device, threads, timed calls per measurement, ``quick`` (the short preset,
    3 repeats), JSON output, and the folder for bench.json and its figure."""

    n: str | None = None
    variants: Sequence[str] | None = None
    dtype: str = "float32"
    device: str = "cpu"
    threads: int | None = None
    repeats: int = 5
    quick: bool = False
    as_json: bool = False
    out: str | None = None


@dataclass(frozen=True)
class BenchOutcome:
    """The benchmark's result (bench.json's content) and the folder it was written to; the exit status is
    0 whether or not the targets pass."""

    options: BenchOptions
    result: dict
    out_dir: Path | None = None
    exit_status: int = 0


def run_bench(options: BenchOptions) -> BenchOutcome:
    """--out checked before any timing, then every variant timed (with a progress display) and the result
    written to --out."""
    from attnlab.bench import PRESETS, BenchConfig, parse_n_list
    from attnlab.bench import run_bench as time_variants
    from attnlab.commands.console import progress_bar
    from attnlab.commands.options import check_out_path
    from attnlab.config import check_device, check_int

    o = options
    check_int("--repeats", o.repeats, minimum=1)
    if o.threads is not None:
        check_int("--threads", o.threads, minimum=1)
    if o.out is not None:
        check_out_path(o.out, "--out")
    ns = parse_n_list(o.n) if o.n is not None else PRESETS["quick" if o.quick else "full"]
    cfg = BenchConfig(n=ns, variants=tuple(o.variants) if o.variants else None, dtype=o.dtype, threads=o.threads,
                      repeats=3 if o.quick and o.repeats == 5 else o.repeats, device=check_device(o.device, "--device"))
    out_dir = bench_out_dir(o.out)
    with progress_bar(disable=o.as_json) as progress:
        task = progress.add_task("bench", total=None)
        result = time_variants(cfg, progress=lambda what, done, total: progress.update(
            task, description=what, completed=done, total=total)).to_dict()
    if out_dir is not None:
        write_bench(out_dir, result)
    return BenchOutcome(o, result, out_dir)


def print_bench_run(outcome: BenchOutcome, console: Console | None = None, err_console: Console | None = None) -> None:
    """The result as JSON, or as the tables of :func:`print_bench` and where bench.json is."""
    from attnlab.commands import console as consoles

    console = console or consoles.console
    if outcome.options.as_json:
        consoles.print_json(outcome.result)
        return
    print_bench(console, outcome.result)
    if outcome.out_dir is not None:
        consoles.say(console, f"results: {outcome.out_dir / 'bench.json'}")


def write_bench(out_dir, result: dict) -> None:
    """bench.json and bench-time.png in out_dir."""
    from attnlab.bench.report import time_figure
    from attnlab.reports.figures import render
    from attnlab.runs.rundir import atomic_write_bytes

    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out_dir / "bench.json", (json.dumps(result, indent=2) + "\n").encode())
    render(time_figure(result["rows"], "bench-time.png"), out_dir)


def print_bench(console: Console, result: Mapping[str, Any] | BenchRecord) -> None:
    """The timings, the crossovers and the targets of ``result`` (bench.json's content, read back as a
    :class:`attnlab.bench.record.BenchRecord`) as tables on ``console``, each fitting its width."""
    rec = result if isinstance(result, BenchRecord) else BenchRecord.from_dict(result)
    env = rec.env
    # quartiles need two repeats: with one, the IQR column is left out rather than printed as 0
    spread = any(r.q1_ms is not None for r in rec.rows if r.status == "ok")
    rows = []
    for r in rec.rows:
        if r.status != "ok":
            rows.append([escape(r.variant), str(r.n), f"[dim]{r.status}[/]", *[""] * (5 + spread)])
            continue
        ratio = f"{r.ratio:.3g}x vs {r.reference}" if r.ratio and r.variant != r.reference else (
            "-" if not r.ratio else "1")
        iqr = [fmt(r.q3_ms - r.q1_ms) if r.q1_ms is not None and r.q3_ms is not None else "-"] if spread else []
        rows.append([escape(r.variant), str(r.n), f"{r.time_ms:.3g}", *iqr,
                     f"{r.gflops:.3g}", f"{r.pct_ceiling:.3g}", fmt(r.peak_mb), escape(ratio)])
    print_table(console, f"attnlab bench ({env.device}: {env.device_name}, {rec.dtype}, {env.threads} threads, "
                         f"matmul ceiling {rec.ceiling_gflops:.1f} GFLOP/s, load {env.load_average_1m:.2f})",
                [Col("variant", "key"), Col("n", "number"), Col("time ms", "number"),
                 *([Col("IQR ms", "number")] if spread else []),
                 Col("GFLOP/s", "number"), Col("% ceiling", "number"), Col("peak MB", "number"),
                 Col("vs reference", "number")], rows, keys=2)
    if not spread:
        say_wrapped(console, "IQR ms: n/a (1 repeat: no spread is known; --repeats 3 or more gives one)")
    for name, note in sorted({(r.variant, r.note) for r in rec.rows if r.status != "ok"}):
        say_wrapped(console, f"{name}: {note}")
    print_table(console, "crossover n vs fused SDPA (time ratio passes 1)",
                [Col("variant", "key"), Col("crossover n", "number"), Col("status")],
                [[escape(name), fmt(round(x.crossover_n)) if x.crossover_n else "-", escape(x.status)]
                 for name, x in rec.crossovers.items()])
    targets = rec.targets
    print_table(console, "targets", [Col("target"), Col("measured", "number"), Col("limit", "number"),
                                     Col("status", "text", min_width=len("inconclusive:")),
                                     Col("detail", min_width=longest_name(t.detail for t in targets))],
                [[escape(x.statement), fmt(x.measured), f"{x.relation} {x.limit:g}",
                  STATUS_STYLE.get(x.status, escape(x.status)), escape(x.detail)] for x in targets])


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
