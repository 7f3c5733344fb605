"""The linear-attention claims (§2.1.2): the forms agree, the corrected Taylor identity, FAVOR+ is unbiased."""

import pytest

from attnlab.registry import select_claims
from tolerances import FLOAT64

IDS = ["transformer-math.linear-forms-agree", "transformer-math.linear-taylor-identity",
       "transformer-math.favor-unbiased"]


@pytest.fixture(scope="module")
def results():
    return {c.id: c.run(seed=0) for c in select_claims(IDS)}


def test_forms_agree(results):
    m = results["transformer-math.linear-forms-agree"].check
    assert m.verdict == "reproduced" and m.threshold == 1e-12
    assert m.anchor == "transformer-math.linear-associativity" and m.falsifier
    assert set(m.values["errors"]) == {"noncausal", "chunked", "cumsum", "recurrent"}
    assert m.measured == max(m.values["errors"].values())


def test_taylor_identity_and_the_printed_formula(results):
    """The text's printed display is checked as printed: it differs; the corrected form agrees (values)."""
    m = results["transformer-math.linear-taylor-identity"].check
    assert m.verdict == "differs" and m.role == "text" and m.threshold == 1e-12
    assert (m.anchor, m.erratum) == ("transformer-math.taylor-display", "transformer-math.taylor-display")
    assert m.measured == m.values["printed_first_error"] == pytest.approx(1.90, abs=0.01)
    assert m.values["closed_form_error"] <= FLOAT64


def test_favor_unbiased(results):
    r = results["transformer-math.favor-unbiased"]
    m = r.check
    # FAVOR+ is not in the text: Performer's proven lemma through attnlab's features, a sanity check (issue 33)
    assert m.verdict == "sanity" and m.role == "sanity" and not m.anchor and not r.claim.anchor
    assert "not in the text" in r.claim.where
    v = m.values
    assert (v["d"], v["m"], v["draws"], v["standard_errors"]) == (16, 32, 2000, 4)
    assert m.threshold == pytest.approx(4 * v["relative_se"], rel=FLOAT64)
    assert m.measured == v["relative_errors"][v["worst_pair"]]
