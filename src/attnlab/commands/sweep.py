"""`attnlab sweep`: an experiment run over a grid of configs and seeds (:func:`run_sweep`, through
:func:`attnlab.sweeps.run_sweep`), and its table (:func:`print_sweep`): one row per run, with the columns
whose values differ between runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from rich.console import Console
from rich.markup import escape

from attnlab.commands.console import console as stdout_console
from attnlab.commands.console import err_console as stderr_console
from attnlab.commands.console import say
from attnlab.terminal import Col, fmt, print_table

if TYPE_CHECKING:
    from attnlab.commands.plan import Plan
    from attnlab.sweeps import SweepResult, SweepSpec


@dataclass(frozen=True)
class SweepOptions:
    """`attnlab sweep`'s options: the experiment, ``--set`` and ``--grid`` texts (key=value, key=v1,v2,...),
    seeds per grid point from ``seed``, where and how the runs execute, JSON output, and ``dry_run``:
    estimate and print, run nothing."""

    experiment: str
    set_: Sequence[str] = ()
    grid: Sequence[str] = ()
    seeds: int = 1
    seed: int = 0
    out: str | None = None
    resume: bool = False
    workers: int | None = None
    executor: str = "process"
    scheduler: str | None = None
    device: str = "cpu"
    as_json: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class SweepOutcome:
    """The finished sweep, or the dry run's plan, or the message of an interrupted sweep; and the exit
    status (1 when a run failed, 130 when interrupted)."""

    options: SweepOptions
    result: SweepResult | None = None
    plan: Plan | None = None
    interrupted: str | None = None
    exit_status: int = 0


def run_sweep(options: SweepOptions) -> SweepOutcome:
    """The dry run's plan, or the sweep run with a progress display; each failed run is said on stderr
    as it fails."""
    from attnlab.commands.options import check_out_path, check_resume, command_argv, key_values
    from attnlab.sweeps import SweepInterrupted, SweepSpec

    o = options
    check_out_path(o.out, "--out", default=None if o.dry_run else "runs")
    if o.resume:
        check_resume(o.out, "sweep.json", "sweep")
    base = key_values(o.set_, "--set", "x=1.5")
    grid = {k: v.split(",") for k, v in key_values(o.grid, "--grid", "n=3,5,7").items()}
    spec = SweepSpec(o.experiment, base=base, grid=grid, seeds=o.seeds, seed0=o.seed)
    if o.dry_run:
        from attnlab.commands.plan import plan_sweep
        from attnlab.config import check_device
        from attnlab.registry import get_experiment

        return SweepOutcome(o, plan=plan_sweep(get_experiment(o.experiment), spec, check_device(o.device, "--device"),
                                               o.workers))
    try:
        result = _run(o, spec, command_argv())
    except SweepInterrupted as e:
        return SweepOutcome(o, interrupted=f"attnlab: {e}", exit_status=130)
    return SweepOutcome(o, result=result, exit_status=1 if result.n_failed else 0)


def _run(o: SweepOptions, spec: SweepSpec, argv: list[str]) -> SweepResult:
    """Run ``spec`` into --out (default runs/sweep-<experiment>-<UTC time>) with a progress display."""
    from attnlab.commands.console import progress_bar
    from attnlab.runs.rundir import default_run_dir
    from attnlab.sweeps import run_sweep as run_grid

    out = o.out if o.out is not None else str(default_run_dir(f"sweep-{o.experiment}"))

    def on_failure(run_id: str, error: str, log: Path) -> None:
        say(stderr_console, f"run {run_id} failed: {error} (log: {log})")

    with progress_bar(disable=o.as_json) as progress:
        bar = progress.add_task(f"sweep {o.experiment}", total=None)
        return run_grid(spec, Path(out), resume=o.resume, workers=o.workers, scheduler=o.scheduler,
                        executor=o.executor, device=o.device, on_failure=on_failure, argv=argv,
                        progress=lambda done, total: progress.update(bar, completed=done, total=total))


def print_sweep(outcome: SweepOutcome, console: Console = stdout_console,
                err_console: Console = stderr_console) -> None:
    """The plan (JSON or table), or the interruption on stderr, or the sweep's counts and rows as JSON or
    as :func:`print_sweep_table`."""
    from attnlab.commands.plan import print_plan_or_json

    o = outcome.options
    if outcome.plan is not None:
        print_plan_or_json(console, outcome.plan, f"attnlab sweep {o.experiment} --dry-run (nothing run)", o.as_json)
    elif outcome.interrupted is not None:
        err_console.print(outcome.interrupted, highlight=False, markup=False, soft_wrap=True)
    elif o.as_json:
        from attnlab.commands.console import print_json
        from attnlab.sweeps import describe

        print_json(describe(outcome.result))
    else:
        print_sweep_table(console, outcome.result)


def print_sweep_table(console: Console, result: SweepResult) -> None:
    """run_id, status, seed, then the columns whose values differ between runs, as many as fit."""
    rows = result.rows
    fixed = ("run_id", "status", "seed", "seconds")
    varying = [k for k in (rows[0] if rows else {})
               if k not in fixed and len({str(r.get(k)) for r in rows}) > 1]
    cell = {c: [fmt(r.get(c)) for r in rows] for c in ("seed", "seconds", *varying)}
    cell["run_id"] = [str(r["run_id"])[:8] for r in rows]
    cell["status"] = [r["status"] for r in rows]

    cols = ["run_id", "status", "seed", *varying, "seconds"]
    print_table(console, f"sweep results ({len(rows)} runs)",
                [Col(c, "key" if c == "run_id" else "number") for c in cols],
                [[("[green]ok[/]" if r["status"] == "ok" else "[red]failed[/]") if c == "status"
                  else escape(cell[c][i]) for c in cols] for i, r in enumerate(rows)])
    say(console, f"table: {result.table_path}")
    console.print(f"{result.n_ok} ok, {result.n_failed} failed, {result.n_skipped} skipped (finished before)",
                  highlight=False, soft_wrap=True)
