"""One experiment's entry in a run directory's results.json (``results["experiments"][id]``): what ran,
with which config, whether it finished, how long it took and what it returned.

`attnlab reproduce` writes one per experiment (a swept experiment also names its sweep), `attnlab analyze`
one for the model it analyses, and the reports read them back: all through :class:`ExperimentEntry`, whose
:meth:`~ExperimentEntry.to_dict` is the stored layout (the keys in this order, a key whose value is absent
left out) and :meth:`~ExperimentEntry.from_dict` its reader (stored runs of every version load).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Mapping

from attnlab.runs.rundir import utc_now

OK, ERROR = "ok", "error"
TRACEBACK_LIMIT = 6  # stack frames kept of an experiment that raised


@dataclass(frozen=True)
class SweepCounts:
    """What a swept experiment's entry says of its sweep: its table (relative to the run directory) and
    how many runs finished, failed, or were finished before (a resumed sweep)."""

    table: str
    ok: int
    failed: int
    skipped: int


@dataclass(frozen=True)
class ExperimentEntry:
    """An experiment's entry in results.json.

    id: the experiment's id ("invertibility.conditioning", "analyze"); description: one line of what it
    measures; config: the config it ran with (for a sweep, the sweep's spec); status: "ok", or "error" when
    it raised (``error`` then holds the traceback); paper, seed, started: where and how a paper's
    experiment ran (absent for analyze); sweep_dir and sweep: a swept experiment's folder and counts;
    results: the stored :class:`attnlab.results.ExperimentResult` (``to_dict()``) when it finished;
    seconds and finished: the time it took and when it ended."""

    id: str
    description: str
    config: dict
    status: str = OK
    paper: str | None = None
    seed: int | None = None
    sweep_dir: str | None = None
    started: str | None = None
    sweep: SweepCounts | None = None
    results: dict | None = None
    error: str | None = None
    seconds: float | None = None
    finished: str | None = None

    ORDER = ("id", "paper", "description", "config", "seed", "sweep_dir", "started", "sweep", "results",
             "status", "error", "seconds", "finished")  # the stored key order

    @property
    def ok(self) -> bool:
        """Whether the experiment finished (its results are stored)."""
        return self.status == OK

    @property
    def summary(self) -> list[dict]:
        """The stored summary rows of its results (none for an experiment that raised)."""
        return list((self.results or {}).get("summary", []))

    def to_dict(self) -> dict[str, Any]:
        """The stored layout: the keys of :attr:`ORDER` whose values are present."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.sweep is not None:
            values["sweep"] = dataclasses.asdict(self.sweep)
        return {k: values[k] for k in self.ORDER if values[k] is not None}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ExperimentEntry":
        """The entry results.json stores (keys it does not know are ignored; an entry without a status
        finished, as the first stored runs did)."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in d.items() if k in known}
        if isinstance(values.get("sweep"), Mapping):
            values["sweep"] = SweepCounts(**values["sweep"])
        values.setdefault("description", "")
        values.setdefault("config", {})
        return cls(**values)

    def succeeded(self, start: float, results: dict) -> "ExperimentEntry":
        """This entry finished: ``results`` stored, status "ok", the seconds since ``start``
        (:func:`time.perf_counter`) and the time it ended stamped."""
        return self._ended(start, results=results, status=OK)

    def failed(self, start: float, error: str) -> "ExperimentEntry":
        """This entry raised: status "error" with ``error`` (the traceback, e.g.
        ``traceback.format_exc(limit=TRACEBACK_LIMIT)``), the seconds and the end stamped."""
        return self._ended(start, status=ERROR, error=error)

    def _ended(self, start: float, **changes: Any) -> "ExperimentEntry":
        """This entry with ``changes``, the seconds since ``start`` and the time it ended."""
        return dataclasses.replace(self, **changes, seconds=round(time.perf_counter() - start, 3),
                                   finished=utc_now())


def entries(results: Mapping[str, Any] | None) -> dict[str, ExperimentEntry]:
    """{experiment id: entry} of a results.json's ``experiments``, in run order."""
    return {i: ExperimentEntry.from_dict(e) for i, e in ((results or {}).get("experiments") or {}).items()}


__all__ = ["ERROR", "OK", "TRACEBACK_LIMIT", "ExperimentEntry", "SweepCounts", "entries"]
