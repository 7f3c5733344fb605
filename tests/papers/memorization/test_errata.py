"""The memorization paper's errata: registered TextError records, each with its witness."""

from __future__ import annotations

from attnlab.errata import KINDS, SURVIVES
from attnlab.papers.memorization.errata import ERRATA
from attnlab.registry import all_claims, all_errata, all_experiments


def test_records_are_registered_and_complete():
    registered = all_errata(["memorization"])
    assert [e.id for e in registered] == [e.id for e in ERRATA] and len(ERRATA) == len({e.id for e in ERRATA})
    ids = {c.id for c in all_claims()} | {e.id for e in all_experiments()}
    for e in ERRATA:
        assert e.kind in KINDS and e.survives in SURVIVES and e.whose == "the text"
        assert not e.check or e.check in ids, e.check  # a named check exists


def test_the_printed_map_sign_is_measured_by_a_claim_that_differs():
    (sign,) = [e for e in ERRATA if e.id == "memorization.appF-map-sign"]
    assert sign.kind == "typo" and sign.survives == "yes" and sign.check == "memorization.proposition3-reduction"
    (claim,) = [c for c in all_claims() if c.id == sign.check]
    assert claim.run(0).verdict == "differs"
