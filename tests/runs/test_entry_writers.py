"""Every writer of results.json's experiments stores :meth:`attnlab.runs.entry.ExperimentEntry.to_dict`:
wherever the commands put an "experiments" mapping into results.json (an item assignment, or a dict given
to ``write_results``), each value is a ``.to_dict()`` of an entry (the readers' side:
tests/runs/test_entry.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "attnlab"
FILES = sorted((SRC / "commands").rglob("*.py")) + [SRC / "cli.py"]


def _stored(value: ast.AST) -> bool:
    """Whether ``value`` is a mapping of entries each stored by ``.to_dict()`` (an empty one too)."""
    def entry(v: ast.AST) -> bool:
        return isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "to_dict"

    if isinstance(value, ast.DictComp):
        return entry(value.value)
    return isinstance(value, ast.Dict) and all(entry(v) for v in value.values)


def _writes(tree: ast.AST) -> list[tuple[int, bool]]:
    """(line, stored through to_dict) of every "experiments" written into results.json."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == "experiments":
                    out.append((n.lineno, _stored(n.value)))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "write_results"
              and n.args and isinstance(n.args[0], ast.Dict)):
            for k, v in zip(n.args[0].keys, n.args[0].values):
                if isinstance(k, ast.Constant) and k.value == "experiments":
                    out.append((n.lineno, _stored(v)))
    return sorted(out)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_every_entry_written_is_an_experiment_entrys_to_dict(path):
    bad = [line for line, ok in _writes(ast.parse(path.read_text())) if not ok]
    assert not bad, f"{path.relative_to(SRC)} writes results.json's experiments by hand at lines {bad}: store " \
                    "ExperimentEntry(...).to_dict()"


def test_reproduce_and_analyze_are_the_writers():
    written = {p.relative_to(SRC).as_posix(): _writes(ast.parse(p.read_text())) for p in FILES}
    assert {name for name, w in written.items() if w} == {"commands/reproduce.py", "commands/analyze/run.py"}


def test_the_scan_sees_a_hand_built_write():
    bad = ast.parse('r["experiments"] = {i: {"id": i, "status": "ok"} for i in ids}\n'
                    'rd.write_results({"experiments": {"a": {"id": "a"}}})\n'
                    'r["experiments"] = {i: e.to_dict() for i, e in es.items()}')
    assert _writes(bad) == [(1, False), (2, False), (3, True)]
