"""`attnlab errata`: the errors found in the texts (:mod:`attnlab.errata`), as JSON or as the table of
:func:`attnlab.commands.catalogue.print_errata`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.console import Console

from attnlab.commands import catalogue
from attnlab.commands.console import console as stdout_console
from attnlab.commands.console import print_json
from attnlab.errata import TextError


@dataclass(frozen=True)
class ErrataOptions:
    """The papers whose errors to list (None: all) and whether as JSON."""

    papers: Sequence[str] | None = None
    as_json: bool = False


@dataclass(frozen=True)
class ErrataOutcome:
    """The records, in the registry's order; listing them always exits 0."""

    options: ErrataOptions
    records: list[TextError]
    exit_status: int = 0


def run_errata(options: ErrataOptions) -> ErrataOutcome:
    """The records of the papers (an unknown paper name is an UnknownNameError naming the papers)."""
    from attnlab.registry import all_errata, get_paper

    for p in options.papers or []:
        get_paper(p)
    return ErrataOutcome(options, list(all_errata(list(options.papers) if options.papers else None)))


def print_errata(outcome: ErrataOutcome, console: Console = stdout_console, err_console: Console | None = None) -> None:
    """The records as JSON, or as one table."""
    if outcome.options.as_json:
        print_json([e.to_dict() for e in outcome.records])
    else:
        catalogue.print_errata(console, outcome.records)
