"""An experiment's entry in results.json: one dataclass writes and reads it (:mod:`attnlab.runs.entry`),
the stored layout unchanged, and no code above the run directory assembles or reads an entry by hand."""

from __future__ import annotations

import ast
import gzip
import json
import time
from pathlib import Path

import pytest

from attnlab.runs.entry import ERROR, OK, ExperimentEntry, SweepCounts, entries

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "attnlab"
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "reports").glob("*.json.gz"))


def _stored_entries() -> list[dict]:
    """Every experiment entry of the stored quick runs (tests/fixtures/reports)."""
    out = []
    for path in FIXTURES:
        results = json.loads(gzip.decompress(path.read_bytes()))["results.json"]
        out += list(results["experiments"].values())
    return out


def test_every_stored_entry_reads_and_writes_back_unchanged_key_order_included():
    stored = _stored_entries()
    assert len(stored) >= 25 and any("sweep" in e for e in stored)  # the five papers, one swept experiment
    for d in stored:
        e = ExperimentEntry.from_dict(d)
        assert list(e.to_dict().items()) == list(d.items()), d["id"]
        assert e.ok and e.summary == d["results"]["summary"]


def test_a_swept_entry_keeps_its_counts_typed():
    (d,) = [e for e in _stored_entries() if "sweep" in e]
    e = ExperimentEntry.from_dict(d)
    assert isinstance(e.sweep, SweepCounts) and e.sweep.table.startswith(d["sweep_dir"] + "/")
    assert (e.sweep.ok, e.sweep.failed) == (d["sweep"]["ok"], d["sweep"]["failed"])


def test_a_failed_entry_stores_the_traceback_and_no_results():
    start = time.perf_counter()
    e = ExperimentEntry("toy.a", "A", {"seed": 1}, paper="toy", seed=1, started="t0").failed(start, "Traceback: boom")
    d = e.to_dict()
    assert list(d) == ["id", "paper", "description", "config", "seed", "started", "status", "error", "seconds",
                       "finished"]
    assert d["status"] == ERROR and d["error"] == "Traceback: boom" and 0 <= d["seconds"] < 5
    assert not e.ok and e.summary == [] and ExperimentEntry.from_dict(d) == e


def test_an_entry_of_analyze_has_no_paper_seed_or_start():
    e = ExperimentEntry("analyze", "every head", {"model": "minilm"}).succeeded(time.perf_counter(), {"summary": []})
    assert list(e.to_dict()) == ["id", "description", "config", "results", "status", "seconds", "finished"]
    assert e.status == OK


def test_entries_reads_a_results_json_in_run_order_and_tolerates_none():
    results = {"experiments": {"b.x": {"id": "b.x", "status": "ok"}, "a.y": {"id": "a.y", "status": "error",
                                                                            "error": "E", "later_key": 1}}}
    got = entries(results)
    assert list(got) == ["b.x", "a.y"] and got["a.y"].error == "E" and got["b.x"].description == ""
    assert entries(None) == {} and entries({}) == {}


# ---- the only way an entry is written or read ----------------------------------------------------
ENTRY_KEYS = {"results", "seconds", "started", "finished", "sweep_dir"}  # keys only an entry has
ABOVE_RUNS = ("commands", "reports", "sweeps", "registry", "cli.py")


def _files(*parts: str) -> list[Path]:
    out = []
    for part in parts:
        path = SRC / part
        out += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return out


def _key_reads(tree: ast.AST, keys: set[str]) -> list[tuple[int, str]]:
    """(line, key) of every ``x["key"]`` read and ``x.get("key")`` call for a key in ``keys``."""
    hits = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.slice, ast.Constant):
            if n.slice.value in keys:
                hits.append((n.lineno, n.slice.value))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "pop")
              and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value in keys):
            hits.append((n.lineno, n.args[0].value))
    return hits


def _entry_literals(tree: ast.AST) -> list[int]:
    """Lines of dict displays that assemble an entry by hand: an "id" beside a status, results or seconds."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Dict):
            keys = {k.value for k in n.keys if isinstance(k, ast.Constant)}
            if "id" in keys and keys & {"status", "results", "seconds"}:
                out.append(n.lineno)
    return out


@pytest.mark.parametrize("path", _files("commands", "reports"), ids=lambda p: str(p.relative_to(SRC)))
def test_commands_and_reports_read_no_entry_key_by_hand(path):
    hits = _key_reads(ast.parse(path.read_text()), ENTRY_KEYS)
    assert not hits, f"{path.relative_to(SRC)} reads an entry's keys by hand at {hits}: use ExperimentEntry"


@pytest.mark.parametrize("path", _files(*ABOVE_RUNS), ids=lambda p: str(p.relative_to(SRC)))
def test_no_code_above_the_run_directory_reads_results_experiments_by_hand(path):
    """results.json's "experiments" is only read through :func:`attnlab.runs.entry.entries`, so every entry
    read is an ExperimentEntry."""
    hits = _key_reads(ast.parse(path.read_text()), {"experiments"})
    assert not hits, f"{path.relative_to(SRC)} reads results.json's experiments by hand at {hits}: use entries()"


@pytest.mark.parametrize("path", _files("commands", "reports", "cli.py"), ids=lambda p: str(p.relative_to(SRC)))
def test_no_command_or_report_builds_an_entry_by_hand(path):
    """An entry is only ever made by ExperimentEntry (a claim's row, with its own id and status, is made by the
    registry and is not an entry)."""
    assert not _entry_literals(ast.parse(path.read_text())), f"{path.relative_to(SRC)} assembles an entry by hand"


def test_the_scan_sees_a_hand_built_entry_and_a_read():
    bad = ast.parse('e = {"id": "x", "status": "ok"}\nr = e.get("seconds")\ns = run.results["experiments"]')
    assert _entry_literals(bad) == [1]
    assert _key_reads(bad, ENTRY_KEYS) == [(2, "seconds")] and _key_reads(bad, {"experiments"}) == [(3, "experiments")]
