"""tests/tolerances.py is the one table of test tolerances: no other test file defines its own
tolerance constant (TOL = 1e-12, TOL64, ATOL, RTOL_..., LABEL_TOL, ...) as a number."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import torch
from tolerances import FLOAT32, FLOAT64, ROW_SUM_TOL_FLOAT64, TOLERANCES

TESTS = Path(__file__).parent
TABLE = TESTS / "tolerances.py"
# TOL, TOL64, ATOL, RTOL_X, ...; FLOAT64_TOL, LABEL_TOL; REL_TOL_FLOAT64, ROW_SUM_TOL_FLOAT64
TOLERANCE_NAME = re.compile(r"^(TOL|ATOL|RTOL)\w*$|^\w*_TOL$|^\w+_(TOL|ATOL|RTOL)(\d+|_\w+)$")


def _is_number(node: ast.expr) -> bool:
    """A numeric literal, or arithmetic on numeric literals only (-1e-12, 2.0 ** -40, 5e-4 + 1e-12)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return False


def _module_statements(body: list[ast.stmt]):
    """Module-level statements, including those under a module-level if/try/with."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, (ast.If, ast.Try, ast.With)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _module_statements(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _module_statements(handler.body)


def _bindings(stmt: ast.stmt):
    """(name, value) for each name a module-level assignment binds to a value it spells out."""
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        pairs = [(stmt.target, stmt.value)]
    elif isinstance(stmt, ast.Assign):
        pairs = [(t, stmt.value) for t in stmt.targets]
    else:
        return
    while pairs:
        target, value = pairs.pop()
        if isinstance(target, ast.Name):
            yield target.id, value
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            pairs.extend(zip(target.elts, value.elts))


def own_tolerances(source: str) -> list[tuple[int, str]]:
    """(line, name) of each module-level tolerance constant the source sets to a number."""
    found = []
    for stmt in _module_statements(ast.parse(source).body):
        for name, value in _bindings(stmt):
            if TOLERANCE_NAME.match(name) and _is_number(value):
                found.append((stmt.lineno, name))
    return found


def test_no_test_file_defines_its_own_tolerance():
    offenders = [f"{path.relative_to(TESTS)}:{line}: {name}"
                 for path in sorted(TESTS.rglob("*.py")) if path != TABLE
                 for line, name in own_tolerances(path.read_text(encoding="utf-8"))]
    assert not offenders, "import these from tests/tolerances.py instead:\n" + "\n".join(offenders)


def test_the_scan_finds_the_forms_it_forbids():
    source = """
TOL = 1e-12
TOL64 = 1e-12  # a comment
ATOL: float = 1e-5
RTOL_FLOAT32 = -1e-5
FLOAT64_TOL = 1e-12
REL_TOL_FLOAT64 = 1e-10
LABEL_TOL = 2.0 ** -30
A_TOL, B = 1e-9, "x"
if True:
    TOL_CUDA = 1e-6
"""
    assert [name for _, name in own_tolerances(source)] == [
        "TOL", "TOL64", "ATOL", "RTOL_FLOAT32", "FLOAT64_TOL", "REL_TOL_FLOAT64", "LABEL_TOL", "A_TOL", "TOL_CUDA"]


def test_the_scan_allows_what_is_not_a_tolerance_constant():
    source = """
from tolerances import FLOAT64 as TOL
TOL = tolerance(torch.float64).rtol  # taken from the table
TOLERANCES = {}
STOLEN = 1e-12
HUGE = 1e300
N_TOL = "x"

def f():
    TOL = 1e-12  # a local, not a module constant
    return TOL
"""
    assert own_tolerances(source) == []


def test_the_named_bounds_are_the_table():
    assert FLOAT64 == TOLERANCES[torch.float64].atol == TOLERANCES[torch.float64].rtol == ROW_SUM_TOL_FLOAT64
    assert FLOAT32 == TOLERANCES[torch.float32].atol == TOLERANCES[torch.float32].rtol
