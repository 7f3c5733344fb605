"""The linear-attention claims (§2.1.2): the forms agree, the corrected Taylor identity, FAVOR+ is unbiased."""

import pytest

from attnlab.registry import select_claims

IDS = ["transformer-math.linear-forms-agree", "transformer-math.linear-taylor-identity",
       "transformer-math.favor-unbiased"]


@pytest.fixture(scope="module")
def results():
    return {c.id: c.run(seed=0) for c in select_claims(IDS)}


def test_forms_agree(results):
    m = results["transformer-math.linear-forms-agree"].measurement
    assert m.passed and m.tolerance == 1e-12
    assert set(m.values["errors"]) == {"noncausal", "chunked", "cumsum", "recurrent"}
    assert m.measured == max(m.values["errors"].values())


def test_taylor_identity_and_the_printed_formula(results):
    m = results["transformer-math.linear-taylor-identity"].measurement
    assert m.passed and m.values["closed_form_error"] == m.measured <= 1e-12
    assert m.values["printed_first_error"] > 0.1  # the formula as printed is a different function


def test_favor_unbiased(results):
    m = results["transformer-math.favor-unbiased"].measurement
    assert m.passed
    v = m.values
    assert (v["d"], v["m"], v["draws"], v["standard_errors"]) == (16, 32, 2000, 4)
    assert m.tolerance == pytest.approx(4 * v["relative_se"], rel=1e-12)
    assert m.measured == v["relative_errors"][v["worst_pair"]]
