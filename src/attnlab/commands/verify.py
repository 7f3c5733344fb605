"""`attnlab verify`: the claims run (:func:`run_verify`) and their tables (:func:`print_verify`): the texts' statements, attnlab's own statements, and the sanity and
descriptive rows, each row a claim (id, verdict, measured, required, statement, the paper's value), or,
for a claim whose inputs are absent, its id, verdict, statement and why it did not run; the raised
checks' tracebacks on stderr; and the tally (:func:`attnlab.checks.tally_line`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.console import Console
from rich.markup import escape

from attnlab.checks import NO_ERROR, Bound, exit_status, tally, tally_line
from attnlab.commands.console import console as stdout_console
from attnlab.commands.console import err_console as stderr_console
from attnlab.commands.console import print_folded, print_json, progress_bar, verdict_markup
from attnlab.config import check_seed
from attnlab.registry import ClaimResult
from attnlab.terminal import Col, fmt, print_table

@dataclass(frozen=True)
class VerifyOptions:
    """`attnlab verify`'s options: the claims (paper names, ids, prefixes or globs; None: all), the seed of
    their inputs, JSON instead of tables, and whether differs, refuted and inconclusive also exit 1."""

    papers: Sequence[str] | None = None
    seed: int = 0
    as_json: bool = False
    strict: bool = False


@dataclass(frozen=True)
class VerifyOutcome:
    """The claims' results, in order, and the exit status they give (1 when one fails or raises)."""

    options: VerifyOptions
    results: list[ClaimResult]
    exit_status: int


def run_verify(options: VerifyOptions) -> VerifyOutcome:
    """Run the chosen claims at the seed, with a progress display unless JSON is asked for."""
    from attnlab.registry import select_claims  # looked up at each call, so that a test can replace it

    check_seed(options.seed, "--seed")
    claims = select_claims(options.papers)
    results = []
    with progress_bar(disable=options.as_json) as progress:
        for c in progress.track(claims, description="verifying claims"):
            results.append(c.run(options.seed))
    return VerifyOutcome(options, results, exit_status([r.verdict for r in results], strict=options.strict))


def print_verify(outcome: VerifyOutcome, console: Console = stdout_console,
                 err_console: Console = stderr_console) -> None:
    """The results as JSON, or as the tables of :func:`print_claims`."""
    if outcome.options.as_json:
        print_json([r.to_dict() for r in outcome.results])
    else:
        print_claims(console, err_console, outcome.results, outcome.options.seed)


SECTIONS = (
    ("text", "the texts' statements (anchored to their ledgers)"),
    ("own", "attnlab's own statements (beyond the texts; never counted as reproductions)"),
    ("sanity", "sanity checks of attnlab's code, and descriptive rows"),
)


def group_of(r: ClaimResult) -> str:
    """The section a claim's row prints in: its check's group; a check that raised goes with the texts'
    rows if the claim is anchored, with the sanity rows otherwise."""
    if r.check is None:
        return "text" if r.claim.anchor else "sanity"
    g = r.check.group
    return "sanity" if g == "info" else g


def print_claims(console: Console, err_console: Console, results: Sequence[ClaimResult], seed: int) -> None:
    """The results as up to three tables on ``console``; a raised check's traceback on
    ``err_console``; the tally on the last line."""
    for group, title in SECTIONS:
        chosen = [r for r in results if group_of(r) == group]
        if not chosen:
            continue
        print_table(console, f"attnlab verify (seed {seed}): {title}",
                    [Col("claim", "key"), Col("verdict", "key"), Col("measured", "number"),
                     Col("required", "number"), Col("statement"), Col("paper")],
                    [_row(r) for r in chosen], stack=True)
    for r in results:
        if r.error:
            err_console.print(f"[red]{r.claim.id} raised:[/]\n{escape(r.error)}")
    print_folded(console, tally_line(tally(r.check for r in results), "claims"), separator=" · ")


NOT_MEASURED = "not measured"
"""The reason of the Bound a check measures when its inputs are absent (``Bound.at_least(0, "not measured")``)."""


def not_run(r: ClaimResult) -> str:
    """Why the claim's check could not run (its inputs are absent), or "" when it measured something."""
    m = r.check
    if m is None or not isinstance(m.measured, Bound) or m.measured.reason != NOT_MEASURED:
        return ""
    return m.cannot_decide or m.detail.removeprefix(NOT_MEASURED + ": ") or NOT_MEASURED


def _row(r: ClaimResult) -> list[str]:
    why = not_run(r)
    if why:  # no measurement, no criterion, no paper value: what the claim states and why it did not run
        return [f"[bold]{escape(r.claim.id)}[/]", verdict_markup(r.verdict), "", "",
                f"[dim]{escape(r.claim.statement)}[/]\n[yellow]{escape('not run: ' + why)}[/]", ""]
    m = r.check
    notes = []
    if m is not None and m.reason:
        notes.append(f"[yellow]{escape(m.reason)}[/]")
    if m is not None and m.verdict == "differs":
        notes.append("[magenta]" + escape("finding: " + (
            "the statement does not hold (no error in the text)" if m.erratum in ("", NO_ERROR)
            else f"errata {m.erratum}")) + "[/]")
    if r.claim.anchor:
        notes.append(f"[dim]anchor: {escape(r.claim.anchor)}[/]")
    return [f"[bold]{escape(r.claim.id)}[/]", verdict_markup(r.verdict),
            escape(m.measured_text) if m else "-", escape(m.criterion) if m else "-",
            f"[dim]{escape(r.claim.statement)}[/]" + "".join("\n" + n for n in notes),
            escape(fmt(r.claim.paper_value))]
