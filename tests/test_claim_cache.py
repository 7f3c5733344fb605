"""The session's claim cache (tests/claim_cache.py): a registered claim is computed once, in any
worker, and read back the same; a test's own claim is never cached."""

from __future__ import annotations

from claim_cache import ClaimCache

from attnlab.checks import at_most
from attnlab.registry import Claim, select_claims

CHEAP = "transformer-math.softmax-jacobian"


def _counting(claim_cache, calls: list):
    """Claim.run as written (the session's cache keeps it as ``run``), recording each call."""

    def run(c: Claim, seed: int):
        calls.append((c.id, seed))
        return claim_cache.run(c, seed)

    return run


def test_a_registered_claim_is_computed_once_and_read_back_equal(tmp_path, claim_cache):
    calls: list = []
    (c,) = select_claims([CHEAP])
    first = ClaimCache(tmp_path, _counting(claim_cache, calls))
    r0 = first.result(c, 0)
    assert first.result(c, 0) is r0 and calls == [(CHEAP, 0)] and first.computed == [(CHEAP, 0)]
    other_worker = ClaimCache(tmp_path, _counting(claim_cache, calls))  # the same folder, nothing in memory
    r1 = other_worker.result(c, 0)
    assert calls == [(CHEAP, 0)] and other_worker.computed == []
    assert r1.claim is c and r1.verdict == r0.verdict and r1.check.to_dict() == r0.check.to_dict()
    other_worker.result(c, 1)
    assert calls == [(CHEAP, 0), (CHEAP, 1)]


def test_a_tests_own_claim_runs_every_time(tmp_path, claim_cache):
    calls: list = []
    cache = ClaimCache(tmp_path, _counting(claim_cache, calls))
    toy = Claim("transformer-math.toy", "-", "-", lambda seed: at_most(0.5, 1.0, role="own"))
    assert cache.result(toy, 0).verdict == cache.result(toy, 0).verdict == "holds"
    assert calls == [("transformer-math.toy", 0)] * 2 and cache.computed == []


def test_claim_run_in_this_session_goes_through_the_cache(claim_cache):
    (c,) = select_claims([CHEAP])
    assert c.run(2) is c.run(2) and (CHEAP, 2) in claim_cache.memory
