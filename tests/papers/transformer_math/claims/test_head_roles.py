"""The head-role claims (§3.1.1): Clark/Voita labels, Kovaleva patterns, TransformerLens-style scores."""

import pytest

from attnlab.registry import select_claims

IDS = ["transformer-math.head-roles-clark-voita", "transformer-math.head-roles-kovaleva",
       "transformer-math.head-roles-patterns"]


@pytest.fixture(scope="module", params=[0, 1])
def results(request):
    return {c.id: c.run(seed=request.param).check for c in select_claims(IDS)}


def test_clark_voita(results):
    m = results[IDS[0]]
    assert m.verdict == "reproduced" and m.role == "construction" and m.measured == 0 and len(m.values["maps"]) == 10
    maps = m.values["maps"]
    assert maps["broad"]["entropy"] > 3.8 and maps["previous"]["voita_offset"] == -1
    assert maps["rare"]["rare"] and maps["rare"]["rare_argmax"] == 1.0
    assert maps["previous-causal"]["next"] == 0.0


def test_kovaleva(results):
    m = results[IDS[1]]
    assert m.verdict == "reproduced" and m.role == "construction"
    assert m.values["labels"] == {k: k for k in m.values["labels"]}
    assert m.values["scores"]["heterogeneous"]["vertical"] < 0.6


def test_patterns(results):
    m = results[IDS[2]]
    assert m.verdict == "reproduced" and m.role == "construction" and m.measured == 0
    n = m.values["n"]
    assert m.values["perfect_previous"]["attnlab"] == [1.0, 1.0]
    assert m.values["perfect_previous"]["transformerlens"] == pytest.approx([(n - 1) / n, 1 - 1 / n])
    assert len(m.values["scores"]) == 8
