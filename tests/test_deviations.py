"""Deviations from the text's protocol (attnlab.deviations): declared by the experiment, named by the
rows they touch, and never deciding a verdict: a row touched by one is decided only with a control."""

from __future__ import annotations

import json

import pytest

from attnlab.checks import CONTROL_DISAGREES, NO_ERROR, Bound, Check, anchored, across_seeds, equals
from attnlab.deviations import Deviation, table_rows
from attnlab.errors import ConfigError
from attnlab.results import ExperimentResult

TOY = dict(anchor="toy.statement", falsifier="a count other than the text's", erratum=NO_ERROR)
DIAGONAL = Deviation("diagonal-b", "architecture", "B masked to its diagonal in system 2",
                     "attnlab's reading of 'a compatible architecture'", control="--set B=full")


def test_a_deviation_is_a_complete_record():
    assert table_rows([DIAGONAL]) == [["diagonal-b", "architecture", "B masked to its diagonal in system 2",
                                       "attnlab's reading of 'a compatible architecture'", "--set B=full"]]
    assert Deviation.from_dict(DIAGONAL.to_dict()) == DIAGONAL
    for bad, says in [(("Diagonal B", "model", "w", "y"), "must be a slug"), (("x", "mood", "w", "y"), "kind must be"),
                      (("x", "model", " ", "y"), "say what"), (("x", "model", "w", ""), "say why")]:
        with pytest.raises(ConfigError, match=says):
            Deviation(*bad)


@pytest.mark.parametrize("measured, verdict", [(2, "differs"), (1, "reproduced")])
def test_a_row_touched_by_a_deviation_is_decided_only_with_its_control(measured, verdict):
    bare = equals(measured, 1, deviations=("diagonal-b",), **TOY)
    assert bare.verdict == "inconclusive" and bare.outcome is (measured == 1)
    assert bare.reason == "deviation from the text's protocol (diagonal-b) and no control run without it"
    controlled = equals(measured, 1, deviations=("diagonal-b",), control="B full, quick scale: same verdict", **TOY)
    assert controlled.verdict == verdict and controlled.reason == ""
    # attnlab's own statements and sanity checks are about attnlab's setup: a deviation does not touch them
    assert equals(measured, 1, role="own", deviations=("diagonal-b",)).verdict in ("holds", "refuted")
    back = Check.from_dict(json.loads(json.dumps(bare.to_dict())))
    assert (back.deviations, back.verdict) == (("diagonal-b",), "inconclusive")


@pytest.mark.parametrize("measured, verdict", [(2, "differs"), (1, "reproduced")])
def test_a_control_that_disagrees_is_shown_and_leaves_the_row_inconclusive(measured, verdict):
    """with_control: a control that agrees decides the row; one that gives another verdict is kept on the row
    (what ran and what it gave), and the row is inconclusive because of it, not for want of a control."""
    row = equals(measured, 1, deviations=("diagonal-b",), **TOY)
    said = "B full, quick scale: 1 -> another verdict"
    agreeing, disagreeing = row.with_control("B full: same verdict", agrees=True), row.with_control(said, agrees=False)
    assert (agreeing.verdict, agreeing.reason) == (verdict, "")
    assert (disagreeing.verdict, disagreeing.control) == ("inconclusive", said)
    assert disagreeing.reason == CONTROL_DISAGREES == "its control without the deviations gives another verdict"
    back = Check.from_dict(json.loads(json.dumps(disagreeing.to_dict())))
    assert (back.verdict, back.reason, back.control) == ("inconclusive", CONTROL_DISAGREES, said)


def test_an_experiment_declares_the_deviations_its_rows_name():
    row = equals(2, 1, deviations=("diagonal-b",), **TOY)
    with pytest.raises(ConfigError, match=r"name deviations \['diagonal-b'\].*does not list"):
        ExperimentResult(summary=[row])
    with pytest.raises(ConfigError, match="ids must be unique"):
        ExperimentResult(deviations=[DIAGONAL, DIAGONAL])
    res = ExperimentResult(summary=[row], deviations=[DIAGONAL])
    back = ExperimentResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert back.deviations == [DIAGONAL] and back.summary[0].verdict == "inconclusive"
    assert ExperimentResult.from_dict(ExperimentResult(deviations=[]).to_dict()).deviations == []  # "none", said
    assert ExperimentResult.from_dict({}).deviations is None  # not said


@pytest.mark.parametrize("per_seed, verdict, support", [
    ([-1, -2, 0.5, -3, -1], "reproduced", "4 of 5 seeds"),   # 'free flavour best' in 4 of 5 seeds
    ([-1, 1, 1, -1, 1], "differs", "3 of 5 seeds"),
    ([-1, 1, -1, 1], "inconclusive", ""),                    # a tie
    ([-1, -1], "inconclusive", ""),                          # too few seeds
    ([-1, -1, Bound.at_most(2)], "reproduced", "2 of 3 seeds"),  # the censored seed cannot tip it
    ([-1, 1, Bound.at_most(2)], "inconclusive", ""),          # ... here it can
])
def test_across_seeds_is_decided_by_the_majority_and_says_its_support(per_seed, verdict, support):
    with anchored(TOY["anchor"], TOY["falsifier"], TOY["erratum"]):
        c = across_seeds("gap", per_seed, "<", 0.0)
    assert c.verdict == verdict and c.support == support
    assert c.threshold == len(per_seed) / 2 and c.values["seeds"] == len(per_seed)
    if support:
        assert c.text.endswith(f"-> {verdict} in {support}")


def test_the_report_shows_deviations_beside_the_rows_and_as_a_table(tmp_path):
    from attnlab.reports import build_report
    from attnlab.runs.rundir import RunDir

    rd = RunDir.create(tmp_path / "run")
    rd.write_config({"papers": ["logic"], "titles": {"logic": "Logic"}, "scale": "quick", "seed": 0}, ["attnlab"])
    rd.write_env(seed=0, device="cpu")
    res = ExperimentResult(summary=[equals(2, 1, deviations=("diagonal-b",), quantity="corr", **TOY)],
                           deviations=[DIAGONAL])
    rd.write_results({"papers": ["logic"], "experiments": {"logic.x": {
        "id": "logic.x", "paper": "logic", "description": "x", "config": {}, "seed": 0, "seconds": 1.0,
        "status": "ok", "results": res.to_dict()}}, "claims": [], "errata": []})
    build_report(rd.path)
    md = (rd.path / "report.md").read_text()
    assert "deviation from the text's protocol (diagonal-b) and no control run without it" in md
    assert "**Deviations from the text's protocol**" in md and "| diagonal-b | architecture |" in md
    html = (rd.path / "report.html").read_text()
    assert "Deviations from the text&#x27;s protocol" in html or "Deviations from the text's protocol" in html
