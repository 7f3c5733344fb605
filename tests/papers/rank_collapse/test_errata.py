"""The rank-collapse errata: sourced records (whose, kind, witness), registered once."""

from attnlab.errata import KINDS, SURVIVES, TextError
from attnlab.papers.rank_collapse.errata import ERRATA
from attnlab.registry import all_errata, select_claims

BY_ID = {e.id: e for e in ERRATA}


def test_records_are_registered_and_well_formed():
    assert all(isinstance(e, TextError) for e in ERRATA) and len(BY_ID) == len(ERRATA)
    assert [e.id for e in all_errata(["rank-collapse"])] == [e.id for e in ERRATA]
    assert all(e.kind in KINDS and e.survives in SURVIVES for e in ERRATA)
    claims = {c.id for c in select_claims(["rank-collapse"])}
    assert all(e.check in claims | {"rank-collapse.ablations"} for e in ERRATA if e.check)


def test_copied_errors_name_their_source():
    """Eq. (9) and Lemma A.3 are Dong et al.'s (App. A), the composite 'norm' is their term,
    Theorem 2.3's relative form is Linformer's Theorem 1."""
    eq9 = BY_ID["rank-collapse.eq9-sign"]
    assert "Dong et al." in eq9.whose and "problem 1" in eq9.whose and eq9.kind == "wrong statement"
    lemma = BY_ID["rank-collapse.lemma-a3-threshold"]
    assert "Dong et al." in lemma.whose and lemma.kind == "omission" and "upper half only" in lemma.correct
    norm = BY_ID["rank-collapse.composite-norm-name"]
    assert norm.whose.startswith("Dong et al.") and "problem 2" in norm.whose and norm.survives == "yes"
    assert "(n + 1)/(2 sqrt n)" in norm.correct and "one head" in norm.conclusion
    rel = BY_ID["rank-collapse.relative-error"]
    assert "Linformer" in rel.whose and rel.check == "rank-collapse.low-rank-log-n" and rel.survives == "partly"


def test_the_notes_residual_is_recorded_as_defined_and_no_convexity_claim_is_attributed():
    r = BY_ID["rank-collapse.residual-argmin"]
    assert "argmin_x ||X - 1 x'||_2" in r.says and "row mean" in r.correct and r.whose == "the text"
    assert not any("convex" in e.says for e in ERRATA)  # the notes' 2-norm argmin is convex; no text says otherwise
