"""Shared by the papers' tests: what every stored experiment result must satisfy."""

import json

import pytest

from attnlab.checks import NO_ERROR, VERDICTS, Check, LegacyCheck
from attnlab.registry import all_errata, all_experiments, paper_ledger
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
    assert_anchored(res.summary)
    if any(c.group == "text" for c in res.summary):  # it measures its text: it says how its protocol departs
        assert res.deviations is not None, "an experiment with text rows lists its deviations (an empty list: none)"
        assert not [c.quantity for c in res.summary if c.deviations and c.verdict == "differs" and not c.control]
    return stored


def assert_anchored(rows: list[Check]) -> None:
    """Every anchored row names an entry of its paper's ledger that an experiment of that paper
    declares, says its falsifier, and a differs row names the errata record it evidences (or
    NO_ERROR: the statement does not hold with no error in the text)."""
    records = {e.id for e in all_errata()}
    for c in rows:
        if c.anchor:
            paper = c.anchor.split(".", 1)[0]
            assert c.anchor in paper_ledger(paper), (c.quantity, c.anchor)
            declared = {a for e in all_experiments() if e.paper == paper for a in e.anchors}
            assert c.anchor in declared, f"{c.anchor} is not among the anchors of any {paper} experiment"
            assert c.falsifier.strip(), c.quantity
        if c.verdict == "differs":
            assert c.erratum == NO_ERROR or c.erratum in records, (c.quantity, c.erratum)


@pytest.fixture
def storable():
    return assert_storable
