"""``run_sweep``: run a registered experiment over a grid, resumably, in parallel.

Order of work, chosen so that bad input fails before anything is written and a
killed sweep keeps what it finished:

1. resolve the experiment, the device and every run's config (ConfigError here);
2. check ``out``: empty or new, or with ``resume`` a sweep of the same spec;
3. open the executor (a bad Dask address fails here, with nothing written);
4. write ``sweep.json`` (spec, resolved overrides, argv, experiment, creation time);
5. skip every run whose ``runs/<run_id>/result.json`` exists, execute the others,
   and rewrite ``results.csv`` and ``summary.json`` after each one.

Layout of ``out``::

    sweep.json  results.csv  summary.json  runs/<run_id>/{config.json, metrics.jsonl, log.txt, result.json}

Ctrl-C stops starting runs, terminates running ones, writes the table of the
finished runs and raises :class:`SweepInterrupted` (a KeyboardInterrupt) whose
message says how to resume.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from attnlab.config import check_device, cpu_cores
from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.runs.jsonable import to_jsonable
from attnlab.runs.rundir import RunDir, utc_now, writable_dir
from attnlab.sweeps.executors import check_executor, open_executor
from attnlab.sweeps.spec import RunPlan, SweepSpec, expand, resolved_overrides
from attnlab.sweeps.table import TABLE, SweepTable
from attnlab.sweeps.worker import LOG, RESULT, RunItem

SWEEP = "sweep.json"
COMPARED = ("experiment", "base", "grid", "seeds", "seed0", "device")  # what --resume must match


@dataclass
class SweepResult:
    """n_ok counts every ok run in the table, n_skipped those found finished on disk."""

    out: Path
    table_path: Path
    rows: list[dict]
    n_ok: int
    n_failed: int
    n_skipped: int


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep; the message says how to resume; ``result`` holds the table so far."""

    def __init__(self, message: str, result: SweepResult):
        super().__init__(message)
        self.result = result


def run_sweep(spec: SweepSpec, out: Path, *, resume: bool = False, workers: int | None = None,
              scheduler: str | None = None, executor: str = "process", device: str = "cpu",
              progress: Callable[[int, int], None] | None = None,
              on_failure: Callable[[str, str, Path], None] | None = None,
              argv: Sequence[str] | None = None) -> SweepResult:
    """Run every grid point x seed of ``spec`` into ``out``; see the module docstring.

    ``progress(done, total)`` is called after each run (and once at the start);
    ``on_failure(run_id, error_line, log_path)`` for each run that raises.
    """
    if not isinstance(spec, SweepSpec):
        raise ConfigError(f"run_sweep needs a SweepSpec, got {type(spec).__name__}")
    exp = get_experiment(spec.experiment)
    kind = check_executor(executor, scheduler, workers)
    device = check_device(device, "--device")
    run_device, note = exp.run_device(device)  # the CPU for an experiment better there
    plans = expand(exp, spec, run_device)
    out = Path(out)
    header = _header(exp.id, spec, resolved_overrides(exp, spec), device, plans, argv)
    if note:
        header["device_note"] = note
    existed = out.exists()
    stored = _check_out(out, header, resume)
    table = SweepTable(out, exp.id, plans)
    todo = []
    for p in plans:
        record = _read_result(out, p)
        if record is None:
            todo.append(p)
        else:
            table.add_ok(p, record)
    table.n_skipped = len(plans) - len(todo)
    n_workers = workers or min(cpu_cores(), max(1, len(todo)))
    try:
        ex = open_executor(kind, n_workers, scheduler) if todo else None
    except BaseException:  # an unreachable scheduler: leave no empty directory behind
        if not existed and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    try:
        _write_header(out, header, stored)
        table.write()
        if progress:
            progress(table.n_skipped, len(plans))
        if ex is not None:
            _execute(ex, out, exp.id, todo, table, progress, on_failure)
    except KeyboardInterrupt:
        if ex is not None:
            ex.close()
            ex = None
        for p in todo:  # runs that finished while the sweep was stopping are kept too
            record = None if p.run_id in table.rows else _read_result(out, p)
            if record is not None:
                table.add_ok(p, record)
        table.write(interrupted=True)
        raise SweepInterrupted(_resume_message(out, table, argv), _result(out, table)) from None
    finally:
        if ex is not None:
            ex.close()
    table.write()
    return _result(out, table)


def _execute(ex: Any, out: Path, experiment: str, todo: list[RunPlan], table: SweepTable,
             progress: Any, on_failure: str) -> None:
    by_id = {p.run_id: p for p in todo}
    items = [RunItem(experiment, p.run_id, p.seed, p.config_json(), str(out / "runs" / p.run_id), ex.threads)
             for p in todo]
    for outcome in ex.run(items):
        plan = by_id[outcome["run_id"]]
        if outcome["status"] == "ok":
            table.add_ok(plan, outcome["record"])
        else:
            table.add_failed(plan, outcome["error"], outcome["seconds"])
            if on_failure:
                on_failure(plan.run_id, outcome["error"], out / "runs" / plan.run_id / LOG)
        table.write()
        if progress:
            c = table.counts()
            progress(c["ok"] + c["failed"], c["total"])


def _result(out: Path, table: SweepTable) -> SweepResult:
    c = table.counts()
    return SweepResult(out=out, table_path=out / TABLE, rows=table.ordered_rows(), n_ok=c["ok"],
                       n_failed=c["failed"], n_skipped=c["skipped"])


def _read_result(out: Path, plan: RunPlan) -> dict | None:
    path = out / "runs" / plan.run_id / RESULT
    if not path.is_file():
        return None
    record = RunDir(path.parent).read_json(RESULT)  # RunDirError (one line) if corrupt
    return record if isinstance(record, dict) and record.get("status") == "ok" else None


# ---- the sweep directory ------------------------------------------------------------------
def _header(experiment: str, spec: SweepSpec, resolved: tuple[dict, dict], device: str,
            plans: list[RunPlan], argv: Sequence[str] | None) -> dict:
    base, grid = resolved
    return to_jsonable({
        "experiment": experiment, "spec": spec.to_json(), "base": base, "grid": grid,
        "seeds": spec.seeds, "seed0": spec.seed0, "device": device,
        "argv": list(argv) if argv is not None else list(sys.argv),
        "run_ids": [p.run_id for p in plans],
    })


def _check_out(out: Path, header: dict, resume: bool) -> dict | None:
    """Refuse an unusable ``out``; return the stored sweep.json when resuming."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; choose a directory")  # before reading it as a sweep
    stored = None
    if out.is_dir() and any(out.iterdir()):
        if not resume:
            raise ConfigError(f"--out {out} is not empty; pass --resume or choose another --out")
        if not (out / SWEEP).is_file():
            raise ConfigError(f"--out {out} is not a sweep directory (no {SWEEP}); choose another --out")
        stored = RunDir(out).read_json(SWEEP)
        diffs = [f"{k} (stored {stored.get(k)!r}, now {header[k]!r})"
                 for k in COMPARED if stored.get(k) != header[k]]
        if diffs:
            raise ConfigError(f"{out} holds a sweep with a different {'; '.join(diffs)}; "
                              "resume with the options it was started with, or choose another --out")
    writable_dir(out)  # leaves at most an empty directory behind if a later step fails
    return stored


def _write_header(out: Path, header: dict, stored: dict | None) -> None:
    (out / "runs").mkdir(exist_ok=True)
    if stored is None:
        RunDir(out).write_json(SWEEP, {**header, "created": utc_now(), "resumed": []})
    else:
        resumed = stored.get("resumed", []) + [{"argv": header["argv"], "at": utc_now()}]
        RunDir(out).write_json(SWEEP, {**stored, "resumed": resumed})


def _resume_message(out: Path, table: SweepTable, argv: Sequence[str] | None) -> str:
    c = table.counts()
    done = f"interrupted: {c['ok'] + c['failed']} of {c['total']} runs finished (kept in {out})"
    if argv and len(argv) > 1 and argv[1] == "sweep":
        cmd = list(argv)
        if "--out" not in cmd and not any(a.startswith("--out=") for a in cmd):
            cmd += ["--out", str(out)]
        if "--resume" not in cmd:
            cmd.append("--resume")
        return f"{done}; resume with: {shlex.join(cmd)}"
    return f"{done}; resume with run_sweep(..., resume=True) on the same out directory"


def describe(result: SweepResult) -> dict[str, Any]:
    """Counts and paths of a finished sweep, JSON-able (for --json and reports)."""
    return {"out": str(result.out), "table": str(result.table_path), "ok": result.n_ok,
            "failed": result.n_failed, "skipped": result.n_skipped, "rows": to_jsonable(result.rows)}
