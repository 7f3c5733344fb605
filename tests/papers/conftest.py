"""Shared by the papers' tests: what every stored experiment result must satisfy."""

import json

import pytest

from attnlab.checks import VERDICTS, Check, LegacyCheck
from attnlab.results import ExperimentResult, check_from_dict


def assert_storable(res: ExperimentResult) -> dict:
    """``res`` is typed, its stored form is strict JSON, and its figure files are distinct;
    returns the stored form (what results.json holds)."""
    assert isinstance(res, ExperimentResult)
    stored = res.to_dict()
    json.dumps(stored, allow_nan=False)
    assert all(isinstance(c, Check) and not isinstance(c, LegacyCheck) and c.verdict in VERDICTS
               for c in res.summary)
    assert not [c.text for c in res.summary if c.verdict == "fail"]  # a fail row is a bug in attnlab
    assert [check_from_dict(json.loads(json.dumps(d))).verdict for d in stored.get("summary", [])] == \
        [c.verdict for c in res.summary]  # the stored numbers give the same verdicts
    assert len({f.file for f in res.figures}) == len(res.figures)
    return stored


@pytest.fixture
def storable():
    return assert_storable
