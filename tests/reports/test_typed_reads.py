"""The reports and the commands read stored JSON typed: a stored result through
:class:`attnlab.results.ExperimentResult` (its checks, tables and figures as records), a claim through
:class:`attnlab.reports.stored_run.StoredClaim`, bench.json through :class:`attnlab.bench.record.BenchRecord`,
and never a key of those records off a dict by hand.

The count of string-key reads (``x["key"]``, ``x['key']``, ``x.get("key"``) in each file of
``attnlab/reports`` and ``attnlab/commands`` is held at most at :data:`BUDGET` (it was 295 in these files
before the records; what is left is config.json and env.json, the errata records, the viewer's blocks,
a sweep's table rows, counts by verdict and a few writes of JSON being built)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "attnlab"
READ = re.compile(r"\[\"[^\"]+\"\]|\['[^']+'\]|\.get\(\"[^\"]+\"")
BUDGET = {  # file -> the most string-key reads it may hold
    "reports/__init__.py": 0, "reports/figures.py": 1, "reports/format.py": 17, "reports/html.py": 5,
    "reports/markdown.py": 9, "reports/notebook.py": 0, "reports/stored_run.py": 8,
    "commands/__init__.py": 0, "commands/bench.py": 1, "commands/catalogue.py": 7, "commands/console.py": 0,
    "commands/construct.py": 3, "commands/coverage.py": 0, "commands/descriptions.py": 0, "commands/errata.py": 0,
    "commands/list.py": 0, "commands/options.py": 0, "commands/plain_help.py": 0, "commands/plan.py": 0,
    "commands/report.py": 0, "commands/reproduce.py": 9, "commands/reproduce_verb.py": 0, "commands/sweep.py": 5,
    "commands/verify.py": 0,
}
# keys of a stored ExperimentResult, of its checks, tables and figures: read through the records only
RESULT_KEYS = {"summary", "tables", "figures", "notes", "interactive", "deviations", "scalars", "series", "panels",
               "categories", "groups", "columns", "rows", "formats", "measured", "measured_text", "criterion",
               "verdict", "quantity", "support", "anchor", "caption", "xticklabels", "colorbar"}
TYPED = ("reports/__init__.py", "reports/figures.py", "reports/format.py", "reports/html.py", "reports/markdown.py")


def _reads(path: Path) -> int:
    return len(READ.findall(path.read_text()))


@pytest.mark.parametrize("name", sorted(BUDGET))
def test_string_key_reads_stay_within_their_budget(name):
    n = _reads(SRC / name)
    assert n <= BUDGET[name], (f"{name} reads {n} string keys (at most {BUDGET[name]}): read stored JSON through "
                               "its record (ExperimentResult, StoredClaim, BenchRecord, ExperimentEntry)")


def test_the_budget_is_a_quarter_of_the_reads_before():
    assert sum(BUDGET.values()) <= 295 / 4
    # every file of those folders has its budget (a new file starts at one)
    here = {str(p.relative_to(SRC)) for d in ("reports", "commands") for p in (SRC / d).glob("*.py")}
    assert here - {"reports/viewer.py"} <= set(BUDGET), sorted(here - set(BUDGET))


def _key_reads(tree: ast.AST, keys: set[str]) -> list[tuple[int, str]]:
    hits = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.slice, ast.Constant):
            if n.slice.value in keys:
                hits.append((n.lineno, n.slice.value))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
              and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value in keys):
            hits.append((n.lineno, n.args[0].value))
    return hits


@pytest.mark.parametrize("name", TYPED)
def test_reports_read_no_key_of_a_stored_result_by_hand(name):
    hits = _key_reads(ast.parse((SRC / name).read_text()), RESULT_KEYS)
    assert not hits, f"{name} reads a stored result's keys by hand at {hits}: use ExperimentResult.from_dict"


def test_the_scan_sees_a_read_by_hand():
    tree = ast.parse('a = res["figures"]\nb = spec.get("caption", "")\nc = t.title')
    assert _key_reads(tree, RESULT_KEYS) == [(1, "figures"), (2, "caption")]
    assert len(READ.findall('x["a"] + y.get("b") + z[\'c\'] + w[k]')) == 3
