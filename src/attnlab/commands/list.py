"""`attnlab list`: the papers, claims, experiments and constructions the registry holds, as JSON
(:func:`attnlab.commands.catalogue.catalogue`) or as tables."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

from attnlab.commands import catalogue
from attnlab.commands.console import console as stdout_console
from attnlab.commands.console import print_json


@dataclass(frozen=True)
class ListOptions:
    """Whether to print the catalogue as JSON."""

    as_json: bool = False


@dataclass(frozen=True)
class ListOutcome:
    """What to print; listing always exits 0 (the registry is read as it is printed)."""

    options: ListOptions
    exit_status: int = 0


def run_list(options: ListOptions) -> ListOutcome:
    """Nothing to run: the catalogue is read where it is printed."""
    return ListOutcome(options)


def print_list(outcome: ListOutcome, console: Console = stdout_console, err_console: Console | None = None) -> None:
    """The catalogue as JSON, or as tables."""
    if outcome.options.as_json:
        print_json(catalogue.catalogue())
    else:
        catalogue.print_catalogue(console)
