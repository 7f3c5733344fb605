"""Checks and verdicts (attnlab.checks) and text-error records (attnlab.errata).

The verdict is derived from the numbers: these tests pin the derivation, censored values,
the derived text and the exit status every command uses.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attnlab.checks import (
    NO_ERROR,
    Bound,
    Censored,
    Check,
    above,
    across_seeds,
    anchored,
    at_least,
    at_most,
    below,
    compare,
    count_verdicts,
    counts_line,
    equals,
    exit_status,
    finding,
    info,
    near,
    tally,
    tally_line,
    uncensored,
)
from attnlab.errata import TextError, table_rows
from attnlab.errors import ConfigError

# The text rows built here check a toy statement: a text row needs an anchor and a falsifier
# (tests/test_ledger.py tests that it refuses to be built without them).
TOY = ("toy.statement", "the relation does not hold")


@pytest.fixture(autouse=True)
def _toy_anchor():
    with anchored(*TOY):
        yield


@pytest.mark.parametrize("role, anchor, holds, breaks", [
    ("text", TOY[0], "reproduced", "differs"),
    ("construction", TOY[0], "reproduced", "fail"),
    ("construction", "", "sanity", "fail"),
    ("own", "", "holds", "refuted"),
    ("sanity", "", "sanity", "fail"),
])
def test_the_role_and_the_anchor_map_holds_and_breaks_to_verdicts(role, anchor, holds, breaks):
    with anchored():  # no claim's anchor: the row's own
        kw = dict(anchor=anchor, falsifier=TOY[1] if anchor else "")
        assert at_most(1e-13, 1e-12, role=role, **kw).verdict == holds
        assert at_most(2e-12, 1e-12, role=role, **kw).verdict == breaks


with anchored(*TOY):
    RELATIONS = [
        (at_most(1.0, 1.0), True), (at_most(1.0 + 1e-15, 1.0), False),
        (below(1.0, 1.0), False), (below(0.999, 1.0), True),
        (at_least(5, 5), True), (at_least(4.999, 5), False),
        (above(5, 5), False), (above(5.001, 5), True),
        (equals(25, 27), False), (equals(27, 27), True), (equals(True, True), True),
        (near(0.54, 0.5, 0.05), True), (near(0.56, 0.5, 0.05), False), (near(0.45, 0.5, 0.05), True),
    ]


@pytest.mark.parametrize("check, outcome", RELATIONS)
def test_each_relation_decides_with_the_stated_threshold(check, outcome):
    assert check.outcome is outcome
    assert check.passed is outcome


@pytest.mark.parametrize("measured, relation, threshold, outcome", [
    (Bound.at_least(20), ">", 1, True),          # a lower bound of 20 settles "> 1"
    (Bound.at_least(750), "<=", 1000, None),     # ... but not "<= 1000"
    (Bound.at_least(750), "<=", 500, False),     # ... and refutes "<= 500"
    (Bound.at_least(750), ">=", 1000, None),
    (Bound.at_most(1e-9), "<=", 1e-8, True),     # an error below the resolution settles "<= 1e-8"
    (Bound.at_most(1e-9), "<=", 1e-12, None),
    (Bound.at_most(1e-9), ">", 1e-3, False),
    (Bound(3, 5), "==", 4, None), (Bound(3, 5), "==", 6, False),
    (Bound(0.98, 1.0), "±", 1.0, True),
])
def test_a_bound_decides_a_relation_only_where_the_whole_interval_does(measured, relation, threshold, outcome):
    tol = 0.05 if relation == "±" else None
    c = compare("q", measured, relation, threshold, tolerance=tol)
    assert c.outcome is outcome
    assert c.verdict == {True: "reproduced", False: "differs", None: "inconclusive"}[outcome]


def test_a_bound_prints_as_a_bound_and_the_verdict_says_why():
    c = at_most(Bound.at_least(750, "search stopped at its 20000-step budget"), 1000, quantity="T* at H = 4")
    assert c.measured_text == ">= 750" and c.criterion == "<= 1000"
    assert c.reason == "censored: >= 750 cannot decide <= 1000 (search stopped at its 20000-step budget)"
    assert c.text == ("T* at H = 4: >= 750, required <= 1000 -> inconclusive (censored: >= 750 cannot decide "
                      "<= 1000 (search stopped at its 20000-step budget))")
    assert str(Bound.at_most(1e-9)) == "<= 1e-09" and str(Bound(1, 2)) == "[1, 2]"


def test_a_censored_value_never_enters_a_fit():
    assert uncensored([1, 2.5, np.float64(3)]) == [1.0, 2.5, 3.0]
    with pytest.raises(Censored, match=r"the fit of T\* against H needs exact values; >= 187 is censored"):
        uncensored([64, 126, Bound.at_least(187)], "the fit of T* against H")


def test_not_like_for_like_is_inconclusive_whatever_the_numbers():
    c = at_most(0.07, 0.1, quantity="SAN+skip at the last layer", cannot_decide="another model: MiniLM l=6, BERT l=12")
    assert c.outcome is True and c.verdict == "inconclusive" and c.reason == "another model: MiniLM l=6, BERT l=12"
    # a check of attnlab's own construction is not about the text: the flag does not apply
    assert at_most(0.0, 1e-8, role="construction", cannot_decide="x").verdict == "reproduced"
    # an own statement measured unlike the setting it speaks of cannot be decided either
    assert at_most(0.07, 0.1, role="own", anchor="", falsifier="", cannot_decide="2 seeds").verdict == "inconclusive"


def test_a_value_that_is_not_a_number_is_a_failure_in_every_judged_role():
    for role in ("text", "construction", "sanity", "own"):
        c = at_most(float("nan"), 1.0, role=role)
        assert c.verdict == "fail" and c.reason == "the measured value is not a number" and not c.passed


def test_criterion_and_text_are_derived_from_the_numbers():
    c = near(torch.tensor(-0.4812, dtype=torch.float64), -0.5, 0.1, "d_k = 4..1024", quantity="log-log slope")
    assert isinstance(c.measured, float) and c.criterion == "-0.5 ± 0.1"
    assert c.text == "log-log slope: -0.481, required -0.5 ± 0.1 -> reproduced"
    assert equals(125, 125, quantity="rank").criterion == "== 125"
    assert info("parameters", "116.5M", paper_value="117M").criterion == ""


def test_bad_checks_say_what_to_change():
    with pytest.raises(ConfigError, match="role must be one of"):
        compare("q", 1, "<=", 2, role="pass")
    with pytest.raises(ConfigError, match="relation must be one of"):
        compare("q", 1, "about", 2)
    with pytest.raises(ConfigError, match="'±' needs a tolerance"):
        compare("q", 1, "±", 2)
    with pytest.raises(ConfigError, match="a judged check measures a number or a Bound.*role='info'"):
        compare("q", "1 / 2", "<=", 2)
    with pytest.raises(ConfigError, match="threshold must be a number"):
        compare("q", 1, "<=", "small")
    with pytest.raises(ConfigError, match="an info row compares with nothing"):
        Check("q", 1, "<=", 2, role="info")
    with pytest.raises(ConfigError, match="lower <= upper"):
        Bound(3, 2)


def test_a_stored_check_reads_back_with_the_same_verdict():
    checks = [at_most(Bound.at_least(750, "budget"), 1000, quantity="T*", paper_value="~550", where="App. H"),
              near(1.0088, 1, 0.05, values={"xs": [1, 2], "inf": float("inf")}),
              compare("r", 0.5, "<=", 1e-8, role="sanity"), info("note", "text value"),
              at_most(float("nan"), 1.0)]
    for c in checks:
        d = json.loads(json.dumps(c.to_dict()))
        back = Check.from_dict(d)
        assert (back.verdict, back.criterion, back.measured_text) == (c.verdict, c.criterion, c.measured_text)
        assert d["verdict"] == c.verdict
    assert checks[1].to_dict()["values"] == {"xs": [1, 2], "inf": "inf"}


def test_across_seeds_states_the_seed_counts():
    c = across_seeds("corr(k^t q, q_true)", [1.0, 0.17, 0.16, 0.66, 0.55], ">=", 0.9, where="§4, Fig. 1")
    assert c.verdict == "differs" and c.measured == 1 and c.threshold == 2.5 and c.support == "4 of 5 seeds"
    assert c.detail.startswith("1 of 5 seeds satisfy >= 0.9 (per seed: 1, 0.17, 0.16, 0.66, 0.55)")
    assert across_seeds("x", [1.0, 0.95, 0.99], ">=", 0.9).verdict == "reproduced"
    few = across_seeds("x", [1.0, 0.95], ">=", 0.9)
    assert few.verdict == "inconclusive" and "2 seed(s), fewer than the 3" in few.reason
    censored = across_seeds("x", [Bound.at_least(10), 12, 20], ">=", 11)
    assert censored.verdict == "reproduced" and censored.values["held"] == 2  # 2 of 3 hold whatever the third


def test_counts_and_exit_status():
    verdicts = ["reproduced", "reproduced", "differs", "inconclusive", "sanity", "info"]
    counts = count_verdicts(verdicts)
    assert counts_line(counts, "claims") == ("6 claims: 2 reproduced, 1 differs, 1 inconclusive, 0 holds, "
                                             "0 refuted, 1 sanity, 0 fail, 1 info")
    assert exit_status(verdicts) == 0 and exit_status(verdicts, strict=True) == 1
    assert exit_status(["reproduced", "sanity", "info", "holds"], strict=True) == 0
    assert exit_status(["holds", "refuted"]) == 0 and exit_status(["refuted"], strict=True) == 1
    assert exit_status(["reproduced", "fail"]) == 1 and exit_status(["error"]) == 1
    assert counts_line(count_verdicts(["error"])).endswith(", 1 error")


def test_the_tally_counts_the_texts_rows_and_attnlabs_own_apart_and_differs_as_distinct_findings():
    cap = dict(erratum="toy.cap")
    rows = [equals(25, 27, **cap), equals(7, 8, **cap),                    # one error, two rows
            equals(1, 2, erratum=NO_ERROR), equals(3, 4, erratum=NO_ERROR),  # one statement that does not hold
            equals(5, 6, anchor="toy.other", falsifier="x", erratum=NO_ERROR),  # another
            equals(1, 1), near(0.3, 0.3, 0.1, role="own", anchor="", falsifier=""),
            near(0.9, 0.3, 0.1, role="own", anchor="", falsifier=""),
            at_most(0.1, 1, role="own", anchor="", falsifier="", cannot_decide="1 seed"),
            info("n", 3), None]
    with anchored():  # outside a claim: a construction row with no anchor of its own tests attnlab's code
        rows.insert(-2, at_most(0.1, 1, role="construction"))
    assert [finding(c) for c in rows[:5]] == ["toy.cap", "toy.cap", "statement toy.statement",
                                              "statement toy.statement", "statement toy.other"]
    t = tally(rows)
    assert t.text == {"reproduced": 1, "differs": 5, "inconclusive": 0}
    assert t.own == {"holds": 1, "refuted": 1, "inconclusive": 1}
    assert (t.findings, t.sanity, t.info, t.error, t.total) == (3, 1, 1, 1, 12)
    assert tally_line(t, "claims") == (
        "12 claims · the texts: 1 reproduced, 5 differs (3 findings), 0 inconclusive · attnlab's own statements: "
        "1 holds, 1 refuted, 1 inconclusive · 1 sanity, 0 fail, 1 info, 1 error")


def test_a_text_error_is_a_complete_record():
    e = TextError("rank-collapse.lemma-a3", "§2.4, Lemma A.3 as used", "(I - D) P~ <= P <= (I + 2D) P~",
                  "holds when every D_ii <= 1.2564", "Dong et al. (2021), Lemma A.3, copied by the notes",
                  "missing hypothesis", "D_ii = 1.3: e^1.3 = 3.67 > 1 + 2.6", "partly", "the upper half needs it",
                  "rank-collapse.entrywise-sandwich")
    assert e.paper == "rank-collapse"
    (row,) = table_rows([e])
    assert row[3].startswith("Dong et al.") and row[6] == "partly: the upper half needs it"
    assert table_rows([e.to_dict()]) == [row]
    with pytest.raises(ConfigError, match="kind must be one of"):
        TextError("p.x", "w", "s", "c", "the text", "mistake", "w", "yes")
    with pytest.raises(ConfigError, match="survives must be one of"):
        TextError("p.x", "w", "s", "c", "the text", "typo", "w", "maybe")
    with pytest.raises(ConfigError, match="witness must not be empty"):
        TextError("p.x", "w", "s", "c", "the text", "typo", " ", "yes")
    with pytest.raises(ConfigError, match="'<paper>.<slug>'"):
        TextError("x", "w", "s", "c", "the text", "typo", "w", "yes")


def test_every_registered_text_error_is_unique_and_sourced():
    from attnlab.registry import all_errata, all_claims, all_experiments

    errata = all_errata()
    ids = {c.id for c in all_claims()} | {e.id for e in all_experiments()}
    papers = {c.paper for c in all_claims()}
    assert {e.paper for e in errata} == papers  # every paper with claims records its text's errors
    assert len({e.id for e in errata}) == len(errata)
    for e in errata:
        assert e.whose.strip() and e.witness.strip()
        assert not e.check or set(e.check.split(", ")) <= ids, (e.id, e.check)
