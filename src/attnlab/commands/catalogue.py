"""`attnlab list` and `attnlab errata`: what the registry holds, as JSON or as tables."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from attnlab.config import Config, describe_fields
from attnlab.errata import TextError
from attnlab.registry import all_claims, all_constructions, all_experiments, papers
from attnlab.terminal import Col, fmt, print_table


def parameters_text(params_cls: type[Config]) -> str:
    """One line per parameter: name=default: meaning."""
    lines = []
    for f in describe_fields(params_cls):
        line = f"{f['name']}={fmt(f['default'])}"
        lines.append(f"{line}: {f['help']}" if f["help"] else line)
    return "\n".join(lines)


def catalogue() -> dict:
    """Papers, claims, experiments and constructions (with their parameters), as `list --json` prints them."""
    return {
        "papers": [{"name": p.name, "title": p.title, "file": p.file} for p in papers().values()],
        "claims": [{"id": c.id, "where": c.where, "statement": c.statement, "paper_value": c.paper_value,
                    "anchor": c.anchor} for c in all_claims()],
        "experiments": [{"id": e.id, "description": e.description, "in_reproduce": e.in_reproduce,
                         "anchors": list(e.anchors)} for e in all_experiments()],
        "constructions": [{"name": c.name, "paper": c.paper, "description": c.description,
                           "parameters": describe_fields(c.params_cls), "anchors": list(c.anchors)}
                          for c in all_constructions()],
    }


def print_catalogue(console: Console) -> None:
    """Four tables: papers with their counts, claims, experiments, constructions with their parameters."""
    known, claims, experiments, constructions = papers(), all_claims(), all_experiments(), all_constructions()
    print_table(console, "papers", [Col("name", "key"), Col("title"), Col("claims", "number"),
                                    Col("experiments", "number"), Col("constructions", "number")],
                [[escape(p.name), escape(p.title), str(sum(c.paper == p.name for c in claims)),
                  str(sum(e.paper == p.name for e in experiments)), str(sum(c.paper == p.name for c in constructions))]
                 for p in known.values()])
    print_table(console, "claims", [Col("id", "key"), Col("where"), Col("statement")],
                [[escape(c.id), escape(c.where), escape(c.statement)] for c in claims], stack=True)
    print_table(console, "experiments", [Col("id", "key"), Col("description")],
                [[escape(e.id), escape(e.description + ("" if e.in_reproduce else " (sweep only)"))]
                 for e in experiments])
    print_table(console, "constructions (attnlab construct NAME --set key=value ... --out FILE.npz)",
                [Col("name", "key"), Col("description"), Col("parameters", items=True)],
                [[escape(c.name), escape(c.description), escape(parameters_text(c.params_cls))]
                 for c in constructions], stack=True)


def print_errata(console: Console, records: Sequence[TextError]) -> None:
    """One two-column table per error in the texts, then their count."""
    for e in records:
        t = Table(title=f"{e.id}  ({e.kind}; conclusion survives: {e.survives})", show_header=False,
                  title_justify="left", expand=True)
        t.add_column("field", style="dim", no_wrap=True)
        t.add_column("value", overflow="fold", ratio=1)
        for label, value in (("where", e.where), ("the text says", e.says), ("what is right", e.correct),
                             ("whose", e.whose), ("witness", e.witness), ("conclusion", e.conclusion),
                             ("measured by", e.check)):
            if value:
                t.add_row(label, escape(value))
        console.print(t)
    console.print(f"{len(records)} text error(s)", highlight=False)


def print_construction_help(console: Console) -> None:
    """What `attnlab construct --help` ends with: every construction and its parameters."""
    for c in all_constructions():
        t = Table(title=f"{c.name} ({c.paper}): {c.description}", title_justify="left")
        for col in ("--set", "default", "meaning"):
            t.add_column(col, overflow="fold")
        for f in describe_fields(c.params_cls):
            t.add_row(f["name"], escape(fmt(f["default"])), escape(f["help"]))
        console.print(t)
