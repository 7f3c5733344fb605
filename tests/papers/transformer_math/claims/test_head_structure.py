"""The head-structure claims (§3.1.2, eqs. 19-22): exact projection, non-uniqueness, non-convexity,
box-case uniqueness, the permutation step, exact fits and baselines.

The projection, the permutation step, the fits and the baselines test attnlab's code against brute force
and linear programs: sanity checks, unanchored (issue 33). Non-uniqueness, non-convexity and box-case
uniqueness are the text's statements, anchored to its ledger."""

import pytest

from attnlab.registry import select_claims
from tolerances import FLOAT64, LP_SOLVE

IDS = ["transformer-math.head-projection-exact", "transformer-math.head-projection-unique",
       "transformer-math.head-set-convex", "transformer-math.head-projection-unique-box",
       "transformer-math.head-permutation-assignment", "transformer-math.head-sigma-fits-exact",
       "transformer-math.head-structure-baselines"]


@pytest.fixture(scope="module", params=[0, 1])
def results(request):
    return {c.id: c.run(seed=request.param).check for c in select_claims(IDS)}


SANITY = [IDS[0], IDS[4], IDS[5], IDS[6]]  # attnlab's projection, assignment, fits and baselines
ANCHORS = {IDS[1]: ("transformer-math.existence-uniqueness", "transformer-math.uniqueness"),
           IDS[2]: ("transformer-math.x-convex", "transformer-math.x-convex"),
           IDS[3]: ("transformer-math.existence-uniqueness", "")}


def test_tests_of_attnlabs_fitters_are_sanity_and_the_texts_statements_anchored(results):
    claims = {c.id: c for c in select_claims(IDS)}
    for i in SANITY:  # tests of attnlab's code, not of the text: sanity, never reproduced
        m = results[i]
        assert (m.role, m.verdict, m.anchor, claims[i].anchor) == ("sanity", "sanity", "", ""), i
        assert claims[i].statement.startswith("attnlab's"), i
    for i, (anchor, erratum) in ANCHORS.items():
        m = results[i]
        assert (m.role, m.anchor, m.erratum) == ("text", anchor, erratum) and m.falsifier, i


def test_projection_exact(results):
    m = results[IDS[0]]
    assert m.threshold == 1e-9 and m.relation == "<="
    assert m.values["lp_box_gap"] <= LP_SOLVE and m.values["lp_supports_gap"] <= LP_SOLVE
    assert m.values["closed_minus_best_sample"] <= 0  # every sampled member is at least as far
    assert m.values["best_sampled_n11"] >= m.values["distance_n11"]


def test_projection_unique_differs(results):
    """The text's uniqueness (Theorem 3.1) as it states it: two minimisers 0.2 apart, so it differs."""
    m = results[IDS[1]]
    assert m.verdict == "differs" and m.role == "text" and (m.relation, m.threshold) == ("==", 0.0)
    assert m.measured == pytest.approx(0.2) and m.values["difference_3x3"] == pytest.approx(0.2)
    assert m.values["distance_3x3"] == pytest.approx(0.5)
    assert m.values["difference_7x7"] == pytest.approx(0.1)  # two weights > eps = 0.05 swap their clip of 0.05
    assert m.values["share_nonunique_16x16"] == 1.0


def test_set_convex_differs(results):
    m = results[IDS[2]]
    assert m.verdict == "differs" and (m.relation, m.threshold) == ("==", 0.0)  # the text: X convex
    assert m.measured == 1.0 and m.values["box_share_inside"] == 1.0
    assert m.values["midpoint_nonzeros_min"] > m.values["s"]


def test_projection_unique_box(results):
    m = results[IDS[3]]
    assert m.verdict == "reproduced" and m.role == "text" and m.values["max_deviation"] <= FLOAT64
    assert m.values["sparse_violation"] == pytest.approx(0.2)


def test_permutation_assignment(results):
    m = results[IDS[4]]
    assert m.values["uncertified"] == 0 and m.values["max_gap"] <= FLOAT64
    cases = m.values["cases"]
    assert len(cases) == 8 and cases["rows_s0"]["method"] == "assignment"
    assert cases["rows_s2"]["method"] == "assignment-certified"
    assert all(c["assignment"] <= c["unpermuted"] + FLOAT64 for c in cases.values())


def test_sigma_fits_exact(results):
    m = results[IDS[5]]
    assert max(m.values["gaps"].values()) <= FLOAT64
    # Sigma_2 as the text defines it (issue 34): every dropout pattern of the w <= 2 band, diagonal cells included,
    # 2^19 of them; the 7 * 15 * 31 * 15 * 7 with no empty row are the members the fit must match
    assert m.values["dropout_patterns"] == 2**19 and m.values["sigma2_members"] == 7 * 15 * 31 * 15 * 7
    assert m.values["sigma3_members"] == 55
    assert m.values["sigma3_fit_rank"] < m.values["n"]


def test_structure_baselines(results):
    m = results[IDS[6]]
    assert m.values["recovered"] == 3 and m.measured <= 0.5
    for family in ("shift", "sigma2", "sigma3"):
        assert m.values[family]["found"] == m.values[family]["planted"]
    uniform = m.values["uniform_16x16"]
    assert uniform["sigma1"] == pytest.approx(30.0) and uniform["band"] == pytest.approx(9.75)
    assert 15.7 <= uniform["sigma2"] <= 21.1  # the author's random-search range, reached by uniform attention
