"""The invertibility claims: every rank certified, the verdict and the numbers behind it asserted."""

from __future__ import annotations

import pytest

from attnlab.checks import tally
from attnlab.papers.invertibility.claims.proof_steps import final_system
from attnlab.papers.invertibility.errata import CERTIFIED_BELOW, CERTIFIED_FULL
from attnlab.registry import select_claims

THEOREM_1 = "invertibility.theorem-1"
CAP = "invertibility.cap-below-n-to-the-l"

IDS = ("invertibility.any-w", "invertibility.fewer-heads-rank-Pd", "invertibility.minimal-heads",
       "invertibility.no-positions-cap", "invertibility.positional-cap", "invertibility.proof-steps",
       "invertibility.theorem1-full-rank", "invertibility.theorem1-mid-size")


def _run(cid, seed=0):
    (c,) = select_claims([cid])
    r = c.run(seed)
    assert r.error is None, r.error
    return r


def test_the_paper_registers_these_claims():
    assert tuple(c.id for c in select_claims(["invertibility"])) == IDS


@pytest.mark.parametrize("seed", [0, 1])
def test_theorem1_full_rank_certified_where_float64_is_wrong(seed):
    r = _run("invertibility.theorem1-full-rank", seed)
    m, v = r.check, r.check.values
    assert r.verdict == "reproduced" and m.role == "text" and m.relation == "==" and m.measured == m.threshold == 32
    assert m.anchor == THEOREM_1 and m.group == "text" and "below N^L" in m.falsifier
    assert v["failures"] == [] and all(c["lower"] == c["upper"] == c["N"] ** c["L"] for c in v["cases"])
    assert v["max_prec_bits"] <= 128 and v["min_margin"] > 0.2  # measured 0.74 (seed 0), 0.23 (seed 1)
    assert v["float_rank_wrong"] >= 5  # numpy's matrix_rank undercounts in 5-6 of the cases
    assert v["min_log10_det"] < -500  # |det| of the 64 x 64 minors is below 1e-500


def test_d_beyond_n_plus_l_minus_2_does_not_break_theorem1():
    # (2, 2, 3, 2) and (3, 2, 4, 3) have d > N + L - 2 and reach N^L: the cap is 1 + P (N+L-2) >= N^L
    v = _run("invertibility.theorem1-full-rank").check.values
    beyond = {(c["N"], c["L"], c["d"], c["P"]): c["rank"] for c in v["beyond"]}
    assert beyond == {g: g[0] ** g[1] for g in CERTIFIED_FULL}
    assert (2, 2, 3, 2) in beyond and (3, 2, 4, 3) in beyond
    assert all(d > N + L - 2 and 1 + P * (N + L - 2) >= N ** L for N, L, d, P in beyond)


def test_mid_size_cases_certified_by_determinant_and_by_rump():
    r = _run("invertibility.theorem1-mid-size")
    v = r.check.values
    assert r.verdict == "reproduced" and r.check.measured == 4 and v["failures"] == []
    assert r.check.anchor == THEOREM_1 and r.check.falsifier
    got = {(c["N"], c["L"]): (c["lower"], c["method"]) for c in v["cases"]}
    assert got == {(2, 7): (128, "det"), (6, 3): (216, "det"), (3, 5): (243, "det"), (7, 3): (343, "inverse")}
    rump = v["cases"][-1]
    assert rump["prec_bits"] <= 256 and 0 < rump["residual"] < 2.0 ** -10  # log2 cond ~153: measured 1e-12 at 192 bits
    assert max(c["prec_bits"] for c in v["cases"]) <= 256 and min(c["margin"] for c in v["cases"]) > 0.5
    assert v["float_rank_wrong"] == 4  # float64 undercounts every one of them


def test_minimal_heads_differ_from_the_texts_ceil_n_to_the_l_over_d():
    r = _run("invertibility.minimal-heads")
    assert r.verdict == "differs" and r.check.measured == 3 and r.check.threshold == 6
    # the text's implied head count, anchored to Theorem 1; where it falls short the cap stops it: the cap's record
    assert (r.check.anchor, r.check.erratum) == (THEOREM_1, CAP)
    v = r.check.values
    got = {(c["N"], c["L"], c["d"]): (c["minimal_P"], c["text_P"], c["rank_at"], c["rank_below"])
           for c in v["cases"]}
    assert got == {(2, 4, 4): (4, 4, 16, 12), (3, 3, 4): (7, 7, 27, 24), (2, 5, 5): (7, 7, 32, 30),
                   (2, 3, 4): (3, 2, 8, 7), (3, 3, 5): (7, 6, 27, 25), (2, 4, 6): (4, 3, 16, 13)}
    assert v["corrected_matches"] == 6  # max(ceil(N^L/d), ceil((N^L-1)/(N+L-2))) everywhere


def test_fewer_heads_give_rank_Pd():
    r = _run("invertibility.fewer-heads-rank-Pd")
    v = r.check.values
    # rank = Pd below N^L is attnlab's statement about its construction (the text states only Pd >= N^L): own,
    # not a reproduction (was construction -> reproduced)
    assert (r.check.role, r.verdict, r.check.anchor, r.check.group) == ("own", "holds", "", "own")
    assert r.claim.anchor == "" and r.claim.statement.startswith("attnlab's statement")
    assert len(v["cases"]) == 15
    assert [c["lower"] for c in v["cases"]] == [c["P"] * c["d"] for c in v["cases"]]
    assert v["max_prec_bits"] == 64


@pytest.mark.parametrize("seed", [0, 1])
def test_no_positions_cap(seed):
    r = _run("invertibility.no-positions-cap", seed)
    v = r.check.values
    # without positions the text says nothing: the caps and reaching them are attnlab's own statement
    assert (r.check.role, r.verdict, r.check.anchor) == ("own", "holds", "") and r.check.measured == 10
    ranks = {(c["N"], c["L"], c["d"], c["P"]): (c["lower"], c["classes"]) for c in v["cases"]}
    assert ranks == {(2, 3, 2, 6): (6, 6), (3, 3, 3, 9): (18, 18), (2, 4, 2, 8): (8, 8), (3, 2, 3, 4): (9, 9),
                     (4, 3, 4, 14): (40, 40), (2, 5, 2, 10): (10, 10), (2, 3, 1, 8): (5, 6),
                     (3, 3, 1, 20): (16, 18), (2, 4, 4, 4): (5, 8), (3, 3, 3, 8): (17, 18)}
    assert all(c["null_upper"] == c["classes"] for c in v["cases"])


def test_positional_cap_makes_theorem1_differ():
    r = _run("invertibility.positional-cap")
    assert r.verdict == "differs" and r.check.role == "text" and r.check.measured == 0 and r.check.threshold == 5
    assert (r.check.anchor, r.check.erratum) == (THEOREM_1, CAP) and r.check.falsifier
    v = r.check.values
    assert [(c["P"] * c["d"], c["N"] ** c["L"], c["lower"], c["upper"]) for c in v["cases"]] == [
        (4, 4, 3, 3), (8, 8, 7, 7), (30, 27, 25, 25), (18, 16, 13, 13), (8, 8, 4, 4)]
    assert v["at_cap"] == len(CERTIFIED_BELOW)


def test_any_w_scale_gives_full_rank():
    r = _run("invertibility.any-w")
    v = r.check.values
    # the text proves the limit w -> oo; full rank at each w tried is attnlab's statement (was reproduced)
    assert (r.check.role, r.verdict, r.check.anchor) == ("own", "holds", "") and r.check.measured == 10
    assert len(v["cases"]) == 10 and all(c["lower"] == c["N"] ** c["L"] for c in v["cases"])
    det = {(c["N"], c["w"]): c["log10_det"] for c in v["cases"]}
    assert det[(2, 100.0)] < det[(2, 0.1)] - 1000 and det[(3, 0.01)] < det[(3, 0.1)] - 50


def test_the_final_determinant_vanishes_for_d_at_least_l():
    r = _run("invertibility.proof-steps")
    assert r.verdict == "differs" and r.check.measured == 2 and r.check.threshold == 3  # exact rank L - 1 < d
    assert r.check.anchor == "invertibility.proof-final-determinant"
    assert r.check.erratum == "invertibility.final-determinant"
    # with a scalar u_t (errata hyperplane-vt) one nonzero row y_n is enough: all 3 are nonzero
    assert r.check.values["nonzero_rows"] == 3    # the rank is min(d, L - 1), with or without the expansion's signs
    for N, L, d, t in ((2, 3, 5, (0, 1, 1)), (2, 4, 4, (0, 1, 1, 0)), (2, 4, 3, (0, 1, 1, 0)), (2, 2, 2, (0, 1))):
        for signs in (False, True):
            assert final_system(N, L, d, t, signs).rank == min(d, L - 1)


@pytest.mark.parametrize("N, L, d, t", [(2, 3, 3, (0, 1, 1)), (2, 3, 5, (0, 1, 1)), (2, 4, 4, (0, 1, 1, 0)),
                                        (2, 4, 6, (1, 0, 1, 1)), (3, 3, 4, (2, 0, 1)), (2, 2, 1, (0, 1))])
def test_every_row_of_the_final_system_is_nonzero_for_every_d(N, L, d, t):
    # the scalar form u_t y_n = 0 needs only y_n != 0: it holds for d >= L as for d < L, with or without signs
    for signs in (False, True):
        assert final_system(N, L, d, t, signs).nonzero_rows == d


def test_the_cap_is_one_finding_and_the_differs_are_distinct_records():
    # positional-cap and minimal-heads witness one error (the cap's record); proof-steps another
    rows = [_run(c).check for c in ("invertibility.positional-cap", "invertibility.minimal-heads",
                                    "invertibility.proof-steps")]
    t = tally(rows)
    assert t.text["differs"] == 3 and t.findings == 2
