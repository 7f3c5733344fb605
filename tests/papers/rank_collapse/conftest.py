"""Shared by the rank-collapse tests: what every stored experiment result must satisfy (typed,
strict JSON, a verdict on every summary row and none fail)."""

import json

import pytest

from attnlab.checks import VERDICTS
from attnlab.results import ExperimentResult


def assert_storable(res: ExperimentResult) -> dict:
    """``res`` is typed, its stored form is strict JSON, every summary row has a verdict and
    none is fail, and its figure files are distinct; returns the stored form."""
    assert isinstance(res, ExperimentResult)
    stored = res.to_dict()
    json.dumps(stored, allow_nan=False)
    assert all(c.verdict in VERDICTS and c.verdict != "fail" for c in res.summary), [c.text for c in res.summary]
    assert all(row["verdict"] == c.verdict for row, c in zip(stored.get("summary", []), res.summary))
    assert len({f.file for f in res.figures}) == len(res.figures)
    return stored


@pytest.fixture
def storable():
    """Overrides tests/papers' fixture of the same name with the verdict-aware check above."""
    return assert_storable
