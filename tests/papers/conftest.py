"""Shared by the papers' tests: what every stored experiment result must satisfy."""

import json

import pytest

from attnlab.results import ExperimentResult


def assert_storable(res: ExperimentResult) -> dict:
    """``res`` is typed, its stored form is strict JSON, and its figure files are distinct;
    returns the stored form (what results.json holds)."""
    assert isinstance(res, ExperimentResult)
    stored = res.to_dict()
    json.dumps(stored, allow_nan=False)
    assert all(c.status in ("pass", "FAIL", "info") for c in res.summary)
    assert len({f.file for f in res.figures}) == len(res.figures)
    return stored


@pytest.fixture
def storable():
    return assert_storable
