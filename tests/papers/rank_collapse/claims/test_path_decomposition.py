"""rank-collapse.path-decomposition (§2.1, Theorem 2.1)."""

from attnlab.papers.rank_collapse.claims.path_decomposition import TOL
from attnlab.registry import select_claims


def test_claim_is_reproduced_and_reports_its_tolerance():
    (c,) = select_claims(["rank-collapse.path-decomposition"])
    r = c.run(seed=3)
    assert r.verdict == "reproduced" and r.check.threshold == TOL == 1e-12
    assert r.check.anchor == "rank-collapse.theorem-2-1" and r.check.falsifier
    assert 0 <= r.check.measured <= TOL
    v = r.check.values
    assert v["cases"] == 18  # L, H in 1..3, with and without skip
    assert v["max_rel_error"] == r.check.measured
    skip = v["worst_at"]["skip"]
    assert v["worst_at"]["paths"] == (v["worst_at"]["H"] + skip) ** v["worst_at"]["L"]
    # the text's two-layer term, read either way, is not the network (the products do not commute)
    assert min(v["text_literal_two_layer_error"].values()) > 1e-2
