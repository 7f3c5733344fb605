"""The head-role claims (§3.1.1): Clark/Voita labels, Kovaleva patterns, TransformerLens-style scores.

Each tests attnlab's detectors of other papers' taxonomies on maps built to carry each pattern: sanity
checks of attnlab's code, never anchored to the text (issue 33)."""

import pytest

from attnlab.registry import select_claims

IDS = ["transformer-math.head-roles-clark-voita", "transformer-math.head-roles-kovaleva",
       "transformer-math.head-roles-patterns"]


@pytest.fixture(scope="module", params=[0, 1])
def results(request):
    return {c.id: c.run(seed=request.param).check for c in select_claims(IDS)}


def test_head_roles_are_sanity_checks_of_attnlabs_detectors(results):
    for c in select_claims(IDS):
        m = results[c.id]
        assert (m.role, m.verdict, m.group, m.anchor, c.anchor) == ("sanity", "sanity", "sanity", "", ""), c.id
        assert "not in the text" in c.where and c.statement.startswith("attnlab's")


def test_clark_voita(results):
    m = results[IDS[0]]
    assert m.measured == 0 and len(m.values["maps"]) == 10
    maps = m.values["maps"]
    assert maps["broad"]["entropy"] > 3.8 and maps["previous"]["voita_offset"] == -1
    assert maps["rare"]["rare"] and maps["rare"]["rare_argmax"] == 1.0
    assert maps["previous-causal"]["next"] == 0.0


def test_kovaleva(results):
    m = results[IDS[1]]
    assert m.measured == 0
    assert m.values["labels"] == {k: k for k in m.values["labels"]}
    assert m.values["scores"]["heterogeneous"]["vertical"] < 0.6


def test_patterns(results):
    m = results[IDS[2]]
    assert m.measured == 0
    n = m.values["n"]
    assert m.values["perfect_previous"]["attnlab"] == [1.0, 1.0]
    assert m.values["perfect_previous"]["transformerlens"] == pytest.approx([(n - 1) / n, 1 - 1 / n])
    assert len(m.values["scores"]) == 8
