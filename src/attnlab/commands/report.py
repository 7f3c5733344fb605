"""`attnlab report`: report.html and report.md of a run directory rebuilt from its stored results
(:func:`attnlab.reports.build_report`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from attnlab.commands.console import console as stdout_console
from attnlab.commands.console import say


@dataclass(frozen=True)
class ReportOptions:
    """The run directory whose reports to rebuild."""

    run_dir: str


@dataclass(frozen=True)
class ReportOutcome:
    """Where the rebuilt reports are; rebuilding exits 0 (bad input raises before anything is written)."""

    html: Path
    markdown: Path
    exit_status: int = 0


def run_report(options: ReportOptions) -> ReportOutcome:
    """Rebuild the reports; a run directory's reports must be writable before anything is rebuilt."""
    from attnlab.reports import build_report
    from attnlab.runs.rundir import CONFIG, check_writable

    if (Path(options.run_dir) / CONFIG).is_file():
        check_writable(options.run_dir, "RUN_DIR")
    html_path, md_path = build_report(options.run_dir)
    return ReportOutcome(html_path, md_path)


def print_report(outcome: ReportOutcome, console: Console = stdout_console, err_console: Console | None = None) -> None:
    """Where the two reports are."""
    say(console, f"report: {outcome.html}")
    say(console, f"report: {outcome.markdown}")
