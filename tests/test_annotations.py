"""Every private helper in src/attnlab carries a return annotation and annotated parameters."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "attnlab"


def _unannotated_helpers() -> list[str]:
    out = []
    for p in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if not node.name.startswith("_") or node.name.startswith("__"):
                continue
            a = node.args
            args = [x for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
            if a.vararg:
                args.append(a.vararg)
            if a.kwarg:
                args.append(a.kwarg)
            if node.returns is None or any(x.annotation is None for x in args):
                out.append(f"{p.relative_to(SRC.parent)}:{node.lineno} {node.name}")
    return out


def test_private_helpers_are_annotated() -> None:
    missing = _unannotated_helpers()
    assert not missing, f"{len(missing)} private helpers lack annotations, e.g. " + "; ".join(missing[:5])
