"""The ledger of a text: its statements that can be checked or bear on a check, each quoted.

A row of attnlab (a claim's check, an experiment's summary line, a construction's check)
may say that the text states something (``reproduced`` / ``differs``) only if it is
*anchored*: it names the ledger entry it checks, and the entry quotes the text. A row with
no anchor tests attnlab's own code (``sanity``) or attnlab's own statement (``own``:
``holds`` / ``refuted``), never the text (:mod:`attnlab.checks`).

Each paper keeps its ledger as data, ``ledger.toml`` in its package::

    [[statement]]
    id = "theorem-1"                 # unique in the paper; rows anchor to "<paper>.theorem-1"
    where = "Theorem 1"              # section, equation, figure, table
    kind = "theorem"                 # one of KINDS
    quote = '''For Pd >= N^k, there exist W_QK^p, e and pos such that A is invertible.'''
    reason = ""                      # why no row checks it ("" when rows do)
    note = ""                        # how attnlab reads it (a typo read as meant, ...), optional

``quote`` is verbatim: the part of a sentence or formula that states it, found in the text
after whitespace is normalised (:func:`normalise`; a test reads the five texts and fails on
a quote that is not there). ``reason`` accounts for an entry that no row checks: a
definition, a citation, data that is not offline, a statement with nothing to measure.
Every entry is *accounted for*: checked by one or more rows, or carrying its reason
(``attnlab coverage``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from attnlab.errors import ConfigError
from attnlab.stored import Stored

KINDS = ("theorem", "lemma", "proposition", "corollary", "equation", "definition", "number", "statement",
         "citation")
"""theorem / lemma / proposition / corollary: a stated result; equation: a formula used as a claim
(an identity, a count); definition: how the text defines an object (what a check must implement);
number: a value printed in a table, a figure or a sentence; statement: a qualitative claim (about an
experiment, a model, a method); citation: what the text attributes to another work."""

FIELDS = ("id", "where", "kind", "quote", "reason", "note")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def normalise(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) as one space, stripped."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Statement(Stored):
    """One entry of a text's ledger.

    id:     "<paper>.<slug>"; a row anchors to it by this id
    where:  where the text states it (section, equation, figure, table)
    kind:   one of :data:`KINDS`
    quote:  the text's words, verbatim up to whitespace: the part that states it
    reason: why no row checks it ("" when rows do)
    note:   how attnlab reads it, where the words need reading (a typo read as meant)
    """

    id: str
    where: str
    kind: str
    quote: str
    reason: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        paper, _, slug = self.id.partition(".")
        if not paper or not _SLUG.match(slug):
            raise ConfigError(f"ledger entry id {self.id!r} must be '<paper>.<slug>' (lower-case letters, digits, '-')")
        if self.kind not in KINDS:
            raise ConfigError(f"ledger entry {self.id!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for name in ("where", "quote"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"ledger entry {self.id!r}: {name} must not be empty")

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def executable(self) -> bool:
        """Checked by rows (no reason given why not)."""
        return not self.reason.strip()


@dataclass(frozen=True)
class Ledger:
    """A paper's statements, in the order of its file."""

    paper: str
    statements: tuple[Statement, ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for s in self.statements:
            if s.paper != self.paper:
                raise ConfigError(f"ledger of {self.paper!r}: entry {s.id!r} belongs to another paper")
            if s.id in seen:
                raise ConfigError(f"ledger of {self.paper!r}: entry {s.id!r} appears twice")
            seen.add(s.id)

    def __iter__(self) -> Iterator[Statement]:
        return iter(self.statements)

    def __len__(self) -> int:
        return len(self.statements)

    def __contains__(self, id: object) -> bool:
        return any(s.id == id for s in self.statements)

    def get(self, id: str) -> Statement:
        for s in self.statements:
            if s.id == id:
                return s
        raise ConfigError(f"{id!r} is not in the ledger of {self.paper!r}; `attnlab coverage {self.paper}` lists "
                          "its entries")

    def missing_quotes(self, text: str) -> list[Statement]:
        """The entries whose quote is not in ``text`` (both whitespace-normalised)."""
        body = normalise(text)
        return [s for s in self.statements if normalise(s.quote) not in body]


def parse(paper: str, source: str, origin: str = "ledger.toml") -> Ledger:
    """The ledger of ``paper`` from the TOML text ``source`` (``origin`` names it in errors)."""
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{origin}: not valid TOML ({e}); fix the file") from None
    unknown = set(data) - {"statement"}
    if unknown:
        raise ConfigError(f"{origin}: unknown table(s) {', '.join(sorted(unknown))}; a ledger holds [[statement]] "
                          "entries only")
    return Ledger(paper, tuple(_statement(paper, e, origin) for e in data.get("statement", [])))


def _statement(paper: str, entry: Mapping[str, object], origin: str) -> Statement:
    unknown = set(entry) - set(FIELDS)
    if unknown:
        raise ConfigError(f"{origin}: entry {entry.get('id')!r} has unknown field(s) {', '.join(sorted(unknown))}; "
                          f"the fields are {', '.join(FIELDS)}")
    missing = [k for k in ("id", "where", "kind", "quote") if k not in entry]
    if missing:
        raise ConfigError(f"{origin}: entry {entry.get('id')!r} lacks {', '.join(missing)}")
    return Statement(f"{paper}.{entry['id']}", str(entry["where"]), str(entry["kind"]), str(entry["quote"]),
                     str(entry.get("reason", "")), str(entry.get("note", "")))


def load(paper: str, path: Path) -> Ledger:
    """The ledger stored at ``path`` (an empty ledger if there is no such file)."""
    if not path.is_file():
        return Ledger(paper, ())
    return parse(paper, path.read_text(encoding="utf-8"), str(path))


__all__ = ["FIELDS", "KINDS", "Ledger", "Statement", "load", "normalise", "parse"]
