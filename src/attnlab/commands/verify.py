"""`attnlab verify`'s table: one row per claim (id, verdict, measured, required, statement, the
paper's value), the raised checks' tracebacks on stderr, and the count of each verdict."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.markup import escape

from attnlab.checks import count_verdicts, counts_line
from attnlab.commands.console import verdict_markup
from attnlab.registry import ClaimResult
from attnlab.terminal import Col, fmt, print_table


def print_claims(console: Console, err_console: Console, results: Sequence[ClaimResult], seed: int) -> None:
    """The results as a table on ``console``; a raised check's traceback on ``err_console``; the
    verdict counts on the last line."""
    rows = []
    for r in results:
        m = r.check
        rows.append([
            f"[bold]{escape(r.claim.id)}[/]", verdict_markup(r.verdict),
            escape(m.measured_text) if m else "-", escape(m.criterion) if m else "-",
            f"[dim]{escape(r.claim.statement)}[/]"
            + (f"\n[yellow]{escape(m.reason)}[/]" if m is not None and m.reason else ""),
            escape(fmt(r.claim.paper_value)),
        ])
    print_table(console, f"attnlab verify (seed {seed})",
                [Col("claim", "key"), Col("verdict", "key"), Col("measured", "number"),
                 Col("required", "number"), Col("statement"), Col("paper")], rows, stack=True)
    for r in results:
        if r.error:
            err_console.print(f"[red]{r.claim.id} raised:[/]\n{escape(r.error)}")
    console.print(counts_line(count_verdicts([r.verdict for r in results]), "claims"), highlight=False)
