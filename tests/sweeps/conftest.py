"""Fixtures shared by the sweep tests: tables without timing columns, the CLI in-process."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from attnlab.cli import main


def _table_without_timing(path: Path) -> list[list[str]]:
    """results.csv as text cells, the timing column (seconds) removed: what must match exactly."""
    rows = list(csv.reader(io.StringIO(Path(path).read_text())))
    keep = [i for i, c in enumerate(rows[0]) if c != "seconds"]
    assert len(keep) == len(rows[0]) - 1, rows[0]
    return [[r[i] for i in keep] for r in rows]


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        main(argv)
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="session")
def table_without_timing():
    return _table_without_timing


@pytest.fixture
def cli(capsys):
    return lambda argv: _cli(argv, capsys)
