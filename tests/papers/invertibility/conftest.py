"""The invertibility tests' check of a stored experiment result (verdicts, strict JSON, figure files)."""

import json

import pytest

from attnlab.checks import VERDICTS
from attnlab.results import ExperimentResult


def assert_storable(res: ExperimentResult) -> dict:
    """``res`` is typed, its stored form is strict JSON that reads back with the same verdicts, and its
    figure files are distinct; returns the stored form (what results.json holds)."""
    assert isinstance(res, ExperimentResult)
    stored = res.to_dict()
    json.dumps(stored, allow_nan=False)
    assert all(c.verdict in VERDICTS for c in res.summary)
    assert [c.verdict for c in ExperimentResult.from_dict(stored).summary] == [c.verdict for c in res.summary]
    assert len({f.file for f in res.figures}) == len(res.figures)
    return stored


@pytest.fixture
def storable():
    return assert_storable
