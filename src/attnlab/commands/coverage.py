"""`attnlab coverage`: each text's ledger, entry by entry, with the rows that check it and their
verdicts, or the reason no row does.

The claims' verdicts are computed here (seed 0, as ``verify`` does); an experiment's rows are
read from a run directory (``--run DIR``, written by ``reproduce``), since running them takes
minutes to hours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from rich.console import Console
from rich.markup import escape

from attnlab.checks import Check
from attnlab.commands.console import console as stdout_console
from attnlab.commands.console import print_json, progress_bar, say
from attnlab.registry import ClaimResult, get_paper, papers, select_claims
from attnlab.registry.coverage import PaperCoverage, paper_coverage
from attnlab.results import check_from_dict
from attnlab.runs.entry import ExperimentEntry, entries
from attnlab.stored import Stored
from attnlab.terminal import Col, print_table


@dataclass(frozen=True)
class RowVerdict(Stored):
    """One row that checks a ledger entry: where it comes from and its verdict."""

    source: str   # the claim id or the experiment id
    verdict: str  # a verdict, "error", or "not run"
    quantity: str = ""


@dataclass(frozen=True)
class Coverage:
    """A paper's coverage and, by entry id, the verdicts of the rows that check it."""

    paper: PaperCoverage
    verdicts: dict[str, list[RowVerdict]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The paper's coverage with each entry's verdicts (``coverage --json``)."""
        return {**self.paper.to_dict(),
                "entries": [{**e.to_dict(), "verdicts": [r.to_dict() for r in self.verdicts.get(e.statement.id, [])]}
                            for e in self.paper.entries]}


@dataclass(frozen=True)
class CoverageOptions:
    """The papers (None: all), a run directory whose experiments' verdicts to show, whether to run the
    anchored claims for theirs, and whether to print JSON."""

    papers: Sequence[str] | None = None
    run: str | None = None
    verdicts: bool = True
    as_json: bool = False


@dataclass(frozen=True)
class CoverageOutcome:
    """Each paper's coverage; printing the ledgers always exits 0."""

    options: CoverageOptions
    results: list[Coverage]
    exit_status: int = 0


def run_coverage(options: CoverageOptions) -> CoverageOutcome:
    """The ledgers with the verdicts of the claims (when run) and of the run directory's experiments."""
    experiments = None
    if options.run is not None:
        from attnlab.runs.rundir import load_run

        experiments = entries(load_run(options.run).results)
    with progress_bar(disable=options.as_json or not options.verdicts) as progress:
        task = progress.add_task("running the anchored claims", total=None)
        results = coverage(options.papers, claims=options.verdicts, run_experiments=experiments,
                           on_claim=lambda cid: progress.update(task, description=cid))
    return CoverageOutcome(options, results)


def print_coverage(outcome: CoverageOutcome, console: Console = stdout_console,
                   err_console: Console | None = None) -> None:
    """The ledgers as JSON, or as the tables of :func:`print_ledgers`."""
    if outcome.options.as_json:
        print_json([c.to_dict() for c in outcome.results])
    else:
        print_ledgers(console, outcome.results, ran_claims=outcome.options.verdicts, run_dir=outcome.options.run)


def coverage(names: Sequence[str] | None, *, claims: bool = True,
             run_experiments: dict[str, ExperimentEntry] | None = None,
             on_claim: Callable[[str], None] | None = None, seed: int = 0) -> list[Coverage]:
    """Coverage of ``names`` (every paper when empty); with ``claims`` the anchored claims are run,
    and ``run_experiments`` (a run directory's experiments, by id) gives the experiment rows."""
    chosen = list(names) if names else [p for p in papers() if p != "selftest"]
    for n in chosen:
        get_paper(n)
    out = []
    for name in chosen:
        cov = paper_coverage(name)
        verdicts: dict[str, list[RowVerdict]] = {}
        if claims:
            for c in select_claims([name]) if any(e.claims for e in cov.entries) else []:
                if not c.anchor:
                    continue
                if on_claim is not None:
                    on_claim(c.id)
                r: ClaimResult = c.run(seed)
                verdicts.setdefault(c.anchor, []).append(RowVerdict(c.id, r.verdict))
        for exp_id, entry in (run_experiments or {}).items():
            if not exp_id.startswith(name + "."):
                continue
            for row in entry.summary:
                check: Check = check_from_dict(row)
                if check.anchor:
                    verdicts.setdefault(check.anchor, []).append(RowVerdict(exp_id, check.verdict, check.quantity))
        out.append(Coverage(cov, verdicts))
    return out


def print_ledgers(console: Console, results: Sequence[Coverage], *, ran_claims: bool, run_dir: str | None) -> None:
    """One table per paper (entry, where, quote, what checks it with verdicts, or the reason), then
    its counts."""
    for cov in results:
        p = cov.paper
        rows = []
        for e in p.entries:
            s = e.statement
            found = cov.verdicts.get(s.id, [])
            lines = []
            for source in e.rows:
                vs = [r for r in found if r.source == source]
                if vs:
                    lines += [f"{escape(source)}: {_verdicts(vs)}"]
                elif source in e.experiments:
                    lines.append(f"{escape(source)}" + (": not in the run" if run_dir else ""))
                else:
                    lines.append(escape(source))
            checked = "\n".join(lines) if lines else f"[dim]not executable: {escape(s.reason)}[/]"
            rows.append([escape(s.id.split(".", 1)[1]), escape(s.where), escape(s.kind), f"[dim]{escape(s.quote)}[/]",
                         f"[yellow]{escape(s.note)}[/]" if s.note else "-", checked])
        print_table(console, f"{p.paper}: the text's statements and what checks them",
                    [Col("entry", "key"), Col("where"), Col("kind"), Col("quote"), Col("read as"), Col("checked by", items=True)],
                    rows, stack=True)
        say(console, f"{p.paper}: {p.line()}")
    if not ran_claims:
        console.print("claims not run (--no-verdicts); experiments' verdicts come from --run DIR", highlight=False)
    elif run_dir is None:
        console.print("experiments' verdicts: give --run DIR (a run directory of `attnlab reproduce`)",
                      highlight=False)


def _verdicts(rows: Sequence[RowVerdict]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    return ", ".join(f"{n} {v}" if n > 1 or len(rows) > 1 else v for v, n in counts.items())


__all__ = ["Coverage", "CoverageOptions", "CoverageOutcome", "RowVerdict", "coverage", "print_coverage", "print_ledgers",
           "run_coverage"]
