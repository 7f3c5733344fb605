"""Fixtures shared by the sweep tests: tables without timing columns."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest


def _table_without_timing(path: Path) -> list[list[str]]:
    """results.csv as text cells, the timing column (seconds) removed: what must match exactly."""
    rows = list(csv.reader(io.StringIO(Path(path).read_text())))
    keep = [i for i, c in enumerate(rows[0]) if c != "seconds"]
    assert len(keep) == len(rows[0]) - 1, rows[0]
    return [[r[i] for i in keep] for r in rows]


@pytest.fixture(scope="session")
def table_without_timing():
    return _table_without_timing
