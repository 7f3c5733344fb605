"""`attnlab reproduce`, the verb: its options, the run (:func:`run_reproduce`) or the dry run's plan, and
what it prints (:func:`print_reproduce`). The run itself is :func:`attnlab.commands.reproduce.reproduce`;
the verb lives apart from it because the dry run's plan (:mod:`attnlab.commands.plan`) is built on that
module's :func:`~attnlab.commands.reproduce.resolve`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from attnlab.checks import exit_status
from attnlab.commands.reproduce import RunInterrupted, reproduce
from attnlab.errors import ConfigError
from attnlab.runs.rundir import load_run

if TYPE_CHECKING:
    from rich.console import Console

    from attnlab.commands.plan import Plan


@dataclass(frozen=True)
class ReproduceOptions:
    """`attnlab reproduce`'s options, as :func:`reproduce` takes them; ``set_``: the ``--set key=value``
    texts; ``dry_run``: estimate and print, run nothing (``as_json``: the estimates as JSON)."""

    papers: Sequence[str]
    scale: str = "quick"
    out: str | None = None
    seed: int = 0
    device: str = "cpu"
    resume: bool = False
    strict: bool = False
    set_: Sequence[str] = ()
    dry_run: bool = False
    as_json: bool = False
    only: Sequence[str] | None = None


@dataclass(frozen=True)
class ReproduceOutcome:
    """A finished run's directory, or the dry run's plan, or the lines an interrupted run prints; and the
    exit status (1 when a row fails or an experiment raises, with ``strict`` also on differs, refuted and
    inconclusive; 130 when interrupted)."""

    options: ReproduceOptions
    path: Path | None = None
    plan: Plan | None = None
    interrupted: list[str] | None = None
    exit_status: int = 0


def run_reproduce(options: ReproduceOptions) -> ReproduceOutcome:
    """The dry run's plan, or the run (with a progress display) and its exit status."""
    from attnlab.commands.console import progress_bar
    from attnlab.commands.options import check_out_path, check_resume, command_argv, key_values

    o = options
    if o.as_json and not o.dry_run:
        raise ConfigError("--json goes with --dry-run (a run's results are in its run directory)")
    if o.dry_run:
        from attnlab.commands.plan import plan_reproduce

        return ReproduceOutcome(o, plan=plan_reproduce(o.papers, scale=o.scale, seed=o.seed, device=o.device,
                                                       settings=key_values(o.set_, "--set", "smollm2=true"),
                                                       only=o.only))
    check_out_path(o.out, "--out", default="runs")
    if o.resume:
        check_resume(o.out, "config.json", "run")
    try:
        with progress_bar() as progress:
            task = progress.add_task("starting", total=None)

            def on_progress(what: str, done: int, total: int) -> None:
                progress.update(task, description=what, completed=done, total=total)

            path = reproduce(o.papers, scale=o.scale, out=o.out, seed=o.seed, device=o.device, argv=command_argv(),
                             resume=o.resume, progress=on_progress,
                             settings=key_values(o.set_, "--set", "smollm2=true"), only=o.only)
    except RunInterrupted as e:  # what is kept and the command that resumes it
        return ReproduceOutcome(o, interrupted=e.lines(), exit_status=130)
    return ReproduceOutcome(o, path=path, exit_status=exit_status(run_verdicts(path), strict=o.strict))


def print_reproduce(outcome: ReproduceOutcome, console: "Console | None" = None,
                    err_console: "Console | None" = None) -> None:
    """The plan (JSON or table), or what an interrupted run keeps and how to resume it (on stderr), or
    where the finished run is, its failures and its tally (:func:`print_outcome`)."""
    from attnlab.commands import console as consoles
    from attnlab.commands.plan import print_plan_or_json

    console, err_console = console or consoles.console, err_console or consoles.err_console
    o = outcome.options
    if outcome.plan is not None:
        print_plan_or_json(console, outcome.plan, f"attnlab reproduce {' '.join(o.papers)} --scale {o.scale} "
                                                  "--dry-run (nothing run)", o.as_json)
    elif outcome.interrupted is not None:
        for line in outcome.interrupted:
            err_console.print(line, highlight=False, markup=False, soft_wrap=True)
    else:
        print_outcome(console, err_console, outcome.path)


def run_verdicts(path: Path) -> list[str]:
    """Every row's verdict in the run directory (experiments that raised count as "error")."""
    from attnlab.reports.format import outline

    counts = outline(load_run(path)).verdict_counts()
    return [v for v, n in counts.items() for _ in range(n)]


def print_outcome(console: "Console", err_console: "Console", path: Path) -> None:
    """Where the run directory and its reports are, each row that failed (on ``err_console``) and the
    tally of the verdicts (:func:`attnlab.checks.tally_line`)."""
    from rich.markup import escape

    from attnlab.checks import tally_line
    from attnlab.commands.console import print_folded, say
    from attnlab.reports.format import outline

    o = outline(load_run(path))
    say(console, f"run directory: {path}")
    say(console, f"report: {path / 'report.html'}")
    say(console, f"report: {path / 'report.md'}")
    for r in o.failures():
        err_console.print(f"[red]{escape(r.source)}: {escape(r.quantity)} -> {r.verdict}[/]"
                          + (f" ({escape(r.reason)})" if r.reason else ""))
    print_folded(console, tally_line(o.tally(), "checks"), separator=" · ")
