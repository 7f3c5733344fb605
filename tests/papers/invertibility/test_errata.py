"""The invertibility note's errata: registered records, each re-examined against the note and its witness."""

from __future__ import annotations

import itertools

from attnlab.errata import KINDS, SURVIVES, table_rows
from attnlab.papers.invertibility.errata import CERTIFIED_BELOW, CERTIFIED_FULL, ERRATA
from attnlab.papers.invertibility.matrix import rank_cap
from attnlab.registry import all_errata, all_experiments, select_claims

BY_ID = {e.id: e for e in ERRATA}


def test_registered_once_with_valid_fields():
    assert [e.id for e in all_errata(["invertibility"])] == [e.id for e in ERRATA] and len(ERRATA) == 11
    assert all(e.kind in KINDS and e.survives in SURVIVES and e.whose == "the text" for e in ERRATA)
    assert len(table_rows(list(ERRATA))) == 11
    known = {c.id for c in select_claims(["invertibility"])} | {x.id for x in all_experiments()
                                                                 if x.paper == "invertibility"}
    assert all(c.strip() in known for e in ERRATA for c in e.check.split(",") if e.check)


def test_the_cap_criterion_replaces_d_beyond_n_plus_l_minus_2():
    e = BY_ID["invertibility.cap-below-n-to-the-l"]
    assert e.kind == "missing hypothesis" and e.survives == "partly"
    assert "1 + P (N + L - 2) >= N^L" in e.correct and "conjecture" in e.correct
    # the head count max(ceil(N^L/d), ceil((N^L-1)/(N+L-2))) is necessary (proved); its sufficiency is the
    # conjecture: the record no longer states "the minimal P is max(...)" as a fact
    assert "The minimal P is" not in e.correct
    assert "heads are necessary (proved). That this many suffice" in e.correct
    assert not any("fails for d > N + L - 2" in (x.says + x.correct + x.witness) for x in ERRATA)
    # the certified cases named in the witness sit on both sides of the criterion, all with Pd >= N^L
    assert all(P * d >= N ** L and 1 + P * (N + L - 2) >= N ** L and d > N + L - 2 for N, L, d, P in CERTIFIED_FULL)
    assert all(P * d >= N ** L > 1 + P * (N + L - 2) for N, L, d, P in CERTIFIED_BELOW)
    assert "(2,2,3,2)" in e.witness and "(3,2,4,3)" in e.witness and "(3,3,5,6)" in e.witness


def test_the_smallest_counterexample_is_2_2_4_1():
    # the smallest N^L (then P d) with Pd >= N^L and a rank cap below N^L, over N, L >= 2
    found = sorted((N ** L, P * d, (N, L, d, P)) for N, L, d, P in itertools.product(range(2, 4), range(2, 4),
                                                                                      range(1, 9), range(1, 9))
                   if P * d >= N ** L and rank_cap(N, L, d, P) < N ** L)
    assert found[0][2] == (2, 2, 4, 1) and rank_cap(2, 2, 4, 1) == 3
    assert "(2, 2, 4, 1)" in BY_ID["invertibility.cap-below-n-to-the-l"].witness


def test_re_examined_entries():
    # the final determinant vanishes already at d = L (rank min(d, L - 1)), not only for d > L
    assert "d >= L" in BY_ID["invertibility.final-determinant"].correct
    assert "d >= L" in BY_ID["invertibility.hyperplane-vt"].correct
    # "for a large enough w" and "W_11 -> +oo" are right (property (2) excludes ties): not errata
    assert not any("large enough" in e.says or "+oo" in e.says for e in ERRATA)
    # property (2): the proof needs degree 2 as well, not every degree
    assert "max(2, d)" in BY_ID["invertibility.property-2"].correct
    assert {e.kind for e in ERRATA if e.survives == "yes"} <= {"typo", "notation", "omission"}


def test_one_record_per_error_the_cap_names_every_row_that_witnesses_it():
    # positional-cap, minimal-heads and conditioning's capped row are one error: one record lists all three
    cap = BY_ID["invertibility.cap-below-n-to-the-l"]
    assert [c.strip() for c in cap.check.split(",")] == ["invertibility.positional-cap", "invertibility.minimal-heads",
                                                        "invertibility.conditioning"]
    # rows-span is the proof's gap (the head count is unproved), no longer a second record for minimal-heads
    assert BY_ID["invertibility.rows-span"].check == "" and "number of heads unproved" in \
        BY_ID["invertibility.rows-span"].correct
    # n-to-the-k no longer cites attnlab's own claim fewer-heads-rank-Pd as the text's witness
    assert "fewer-heads-rank-Pd" not in BY_ID["invertibility.n-to-the-k"].witness


def test_the_final_determinant_record_no_longer_says_the_proof_fails_for_d_at_least_l():
    e = BY_ID["invertibility.final-determinant"]
    # the old record: "the proof's last step holds at most for d <= L - 1 ... for d >= L it stands as a conjecture"
    assert "holds at most for d <= L - 1" not in e.conclusion and "stands as a conjecture" not in e.conclusion
    # the singular d x d system comes from the v_t in R^d of hyperplane-vt; with scalar u_t, y_n != 0 suffices
    assert "hyperplane-vt" in e.correct and "y_n != 0" in e.correct and "every d" in e.correct
    assert "number of heads" in e.conclusion and "not left unproved" in e.conclusion
    assert "each of its 3 rows is nonzero" in e.witness and e.check == "invertibility.proof-steps"
