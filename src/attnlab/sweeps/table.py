"""The sweep's results table (results.csv) and counts (summary.json).

One row per run, in grid order (first grid key slowest, seeds innermost)::

    run_id, status ("ok" | "failed"), seed, <every config field but seed>,
    <every scalar the runs returned, in order of first appearance>, seconds

Config values are flattened to cells: sequences as "a;b;c" (the --set syntax),
nested dicts as "key.sub" columns. Only ``seconds`` depends on timing. Both files
are rewritten atomically after every finished run, so a killed sweep leaves a
consistent table of the runs finished so far.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path
from typing import Any, Sequence

from attnlab.runs.rundir import RunDir, utc_now
from attnlab.config import format_value
from attnlab.sweeps.spec import RunPlan
from attnlab.sweeps.worker import LOG

TABLE, SUMMARY = "results.csv", "summary.json"
TIMING_COLUMNS = ("seconds",)


def flatten(config: dict, prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in config.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = format_value(v)
    return out


class SweepTable:
    """Rows of the runs finished so far (ok from result.json, failed from this session)."""

    def __init__(self, out: Path, experiment: str, plans: Sequence[RunPlan]):
        self.rd, self.experiment, self.plans = RunDir(out), experiment, list(plans)
        self.rows: dict[str, dict] = {}
        self.failures: dict[str, str] = {}
        self.n_skipped = 0

    def _base_row(self, plan: RunPlan, status: str) -> dict:
        config = {k: v for k, v in flatten(dataclasses.asdict(plan.config)).items() if k != "seed"}
        return {"run_id": plan.run_id, "status": status, "seed": plan.seed, **config}

    def add_ok(self, plan: RunPlan, record: dict) -> None:
        self.failures.pop(plan.run_id, None)
        self.rows[plan.run_id] = {**self._base_row(plan, "ok"), **record.get("scalars", {}),
                                  "seconds": record.get("seconds")}

    def add_failed(self, plan: RunPlan, error: str, seconds: float | None) -> None:
        self.failures[plan.run_id] = error
        self.rows[plan.run_id] = {**self._base_row(plan, "failed"), "seconds": seconds}

    # ---- views ----------------------------------------------------------------------
    def ordered_rows(self) -> list[dict]:
        """Rows in grid order, every row with every column (None where a run has no value)."""
        cols = self.columns()
        return [{c: self.rows[p.run_id].get(c) for c in cols} for p in self.plans if p.run_id in self.rows]

    def columns(self) -> list[str]:
        cols = ["run_id", "status", "seed"]
        for p in self.plans:  # config columns from the plans: the same for finished and pending
            cols += [c for c in self._base_row(p, "ok") if c not in cols]
        fixed = set(cols)
        for p in self.plans:
            row = self.rows.get(p.run_id)
            if row:
                cols += [c for c in row if c not in fixed and c not in TIMING_COLUMNS and c not in cols]
        return cols + list(TIMING_COLUMNS)

    def counts(self) -> dict[str, int]:
        statuses = [r["status"] for r in self.rows.values()]
        ok, failed = statuses.count("ok"), statuses.count("failed")
        return {"total": len(self.plans), "ok": ok, "failed": failed, "skipped": self.n_skipped,
                "pending": len(self.plans) - ok - failed}

    # ---- writing (atomic) -----------------------------------------------------------
    def write(self, *, interrupted: bool = False) -> Path:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        cols = self.columns()
        writer.writerow(cols)
        for row in self.ordered_rows():
            writer.writerow(["" if row[c] is None else row[c] for c in cols])
        path = self.rd.write_text(TABLE, buf.getvalue())
        failures = [{"run_id": p.run_id, "error": self.failures[p.run_id],
                     "log": str(self.rd.path / "runs" / p.run_id / LOG)}
                    for p in self.plans if p.run_id in self.failures]
        self.rd.write_json(SUMMARY, {"experiment": self.experiment, **self.counts(),
                                     "interrupted": interrupted, "failures": failures,
                                     "table": TABLE, "updated": utc_now()})
        return path
