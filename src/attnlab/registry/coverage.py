"""Coverage: every entry of a paper's ledger, and the rows that check it or the reason none does.

A ledger entry (:mod:`attnlab.ledger`) is *accounted for* when a claim anchors to it, an
experiment or a construction declares it among its ``anchors``, or it carries a reason
why no row checks it. ``attnlab coverage [PAPER]`` prints this; the README's coverage
table counts it per paper (:func:`paper_counts`).
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.ledger import Statement
from attnlab.registry.claims import all_claims
from attnlab.registry.constructions import all_constructions
from attnlab.registry.experiments import all_experiments
from attnlab.registry.state import get_paper, paper_ledger


@dataclass(frozen=True)
class EntryCoverage:
    """One ledger entry and what checks it.

    statement:     the entry
    claims:        ids of the claims anchored to it
    experiments:   ids of the experiments that declare it among their anchors
    constructions: names of the constructions that do
    """

    statement: Statement
    claims: tuple[str, ...]
    experiments: tuple[str, ...]
    constructions: tuple[str, ...]

    @property
    def rows(self) -> tuple[str, ...]:
        """Everything that checks the entry: claim ids, experiment ids, ``construct NAME``."""
        return self.claims + self.experiments + tuple(f"construct {c}" for c in self.constructions)

    @property
    def checked(self) -> bool:
        return bool(self.rows)

    @property
    def accounted(self) -> bool:
        """Checked by rows, or carrying the reason why not."""
        return self.checked or not self.statement.executable

    def to_dict(self) -> dict:
        return {**self.statement.to_dict(), "claims": list(self.claims), "experiments": list(self.experiments),
                "constructions": list(self.constructions), "checked": self.checked, "accounted": self.accounted}


@dataclass(frozen=True)
class PaperCoverage:
    """A paper's ledger with what checks each entry.

    checked:        entries checked by at least one row
    not_executable: entries carrying a reason and checked by no row
    unaccounted:    entries with neither (a defect: the test of the ledgers refuses them)
    """

    paper: str
    entries: tuple[EntryCoverage, ...]

    @property
    def checked(self) -> int:
        return sum(e.checked for e in self.entries)

    @property
    def not_executable(self) -> int:
        return sum(not e.checked and not e.statement.executable for e in self.entries)

    @property
    def unaccounted(self) -> list[str]:
        return [e.statement.id for e in self.entries if not e.accounted]

    def line(self) -> str:
        """"42 entries: 30 checked, 12 not executable" (and the unaccounted count, if any)."""
        out = f"{len(self.entries)} entries: {self.checked} checked, {self.not_executable} not executable"
        return out + (f", {len(self.unaccounted)} unaccounted" if self.unaccounted else "")

    def to_dict(self) -> dict:
        return {"paper": self.paper, "entries": [e.to_dict() for e in self.entries], "checked": self.checked,
                "not_executable": self.not_executable, "unaccounted": self.unaccounted}


def paper_coverage(paper: str) -> PaperCoverage:
    """What checks each entry of ``paper``'s ledger (unknown paper: UnknownNameError)."""
    get_paper(paper)
    claims = [c for c in all_claims() if c.paper == paper]
    experiments = [e for e in all_experiments() if e.paper == paper]
    constructions = [c for c in all_constructions() if c.paper == paper]
    entries = tuple(
        EntryCoverage(s, tuple(c.id for c in claims if c.anchor == s.id),
                      tuple(e.id for e in experiments if s.id in e.anchors),
                      tuple(c.name for c in constructions if s.id in c.anchors))
        for s in paper_ledger(paper))
    return PaperCoverage(paper, entries)


__all__ = ["EntryCoverage", "PaperCoverage", "paper_coverage"]
