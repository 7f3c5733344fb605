"""A stored run read back typed, once, for the reports: every experiment as its entry with its result,
every claim as the row it stored.

The reports read results.json through these records and attributes only: an experiment's entry through
:class:`attnlab.runs.entry.ExperimentEntry`, what it returned through
:meth:`attnlab.results.ExperimentResult.from_dict` (summary checks, tables, typed figures, deviations,
notes), and a claim's stored row (:meth:`attnlab.registry.claims.ClaimResult.to_dict`: the claim's id, where,
statement and paper value beside its check's fields, or the traceback of a check that raised) as a
:class:`StoredClaim`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from attnlab.checks import Check
from attnlab.results import ExperimentResult, check_from_dict
from attnlab.runs.entry import ExperimentEntry


@dataclass(frozen=True)
class StoredExperiment:
    """An experiment of a stored run: its ``entry`` and, where it finished, its ``result`` read back
    typed (None: it raised, and ``entry.error`` holds the traceback)."""

    entry: ExperimentEntry
    result: ExperimentResult | None

    @classmethod
    def read(cls, entry: ExperimentEntry) -> "StoredExperiment":
        """``entry`` with its stored results read back (a finished entry without results: an empty result)."""
        return cls(entry, ExperimentResult.from_dict(entry.results or {}) if entry.ok else None)

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def ok(self) -> bool:
        """Whether the experiment finished (it has a result)."""
        return self.result is not None

    @property
    def checks(self) -> list[Check]:
        """Its summary rows, each verdict derived again from the stored numbers (none if it raised)."""
        return list(self.result.summary) if self.result is not None else []


@dataclass(frozen=True)
class StoredClaim:
    """A claim's stored row: the claim's ``id``, ``statement``, ``where`` and ``paper_value``, the
    ``detail`` its check gave, and the check read back (None: the check raised)."""

    id: str
    statement: str
    where: str
    paper_value: Any
    detail: str
    check: Check | None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StoredClaim":
        """A stored claim row back; one stored by an earlier release (``status``, ``expected``) reads as
        its :class:`attnlab.checks.LegacyCheck`."""
        raised = d.get("error") is not None or "error" in (d.get("verdict"), d.get("status"))
        statement = d.get("statement", "")
        check = None if raised else check_from_dict({**d, "quantity": statement})
        return cls(d["id"], statement, d.get("where", ""), d.get("paper_value"), d.get("detail", ""), check)


__all__ = ["StoredClaim", "StoredExperiment"]
