"""The claims registry: ids, selection, verdicts, and error capture."""

import pytest

from attnlab.registry import Measurement, all_claims, at_least, at_most, select_claims
from attnlab.registry import Claim, claim
from attnlab.errors import ConfigError, UnknownNameError
from attnlab.papers import PAPERS


def test_every_claim_id_names_a_paper_and_has_a_statement():
    claims = all_claims()
    assert len(claims) >= 3
    for c in claims:
        assert c.paper in PAPERS, c.id
        assert c.statement and c.where, c.id


def test_at_most_and_at_least_decide_with_the_stated_tolerance():
    assert at_most(1e-13, 1e-12).passed and not at_most(2e-12, 1e-12).passed
    assert at_least(5, 5).passed and not at_least(4.999, 5).passed
    m = at_most(3.0, 2.0, "detail")
    assert (m.measured, m.tolerance, m.relation, m.detail) == (3.0, 2.0, "<=", "detail")


def test_selection_by_paper_id_and_prefix():
    by_paper = select_claims(["transformer-math"])
    assert by_paper and all(c.paper == "transformer-math" for c in by_paper)
    one = select_claims(["rank-collapse.softmax-shift-invariance"])
    assert [c.id for c in one] == ["rank-collapse.softmax-shift-invariance"]
    assert select_claims(None) == all_claims()


def test_unknown_selector_says_what_to_use():
    with pytest.raises(UnknownNameError, match="unknown paper or claim 'nope'.*attnlab list"):
        select_claims(["nope"])


def test_bad_claim_id_is_rejected():
    with pytest.raises(ConfigError, match="must be '<paper>.<name>'"):
        claim("not-a-paper.x", where="-", statement="-")


def test_a_check_that_raises_is_reported_as_error_not_hidden():
    def broken(seed: int) -> Measurement:
        raise RuntimeError("boom")

    r = Claim("logic.broken", "-", "-", broken).run(0)
    assert r.status == "error" and "boom" in r.error
    assert r.to_dict()["status"] == "error"


@pytest.mark.parametrize("c", all_claims(), ids=lambda c: c.id)
def test_every_registered_claim_passes_for_two_seeds(c):
    for seed in (0, 1):
        r = c.run(seed)
        assert r.status == "pass", (c.id, seed, r.error or r.measurement)
