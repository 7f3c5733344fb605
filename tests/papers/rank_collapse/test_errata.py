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
    """Eq. (9) and Lemma A.3 are Dong et al.'s (App. A), Theorem 2.3's relative form is
    Linformer's Theorem 1."""
    eq9 = BY_ID["rank-collapse.eq9-sign"]
    assert "Dong et al." in eq9.whose and "problem 1" in eq9.whose and eq9.kind == "wrong statement"
    lemma = BY_ID["rank-collapse.lemma-a3-threshold"]
    assert "Dong et al." in lemma.whose and lemma.kind == "omission" and "upper half only" in lemma.correct
    rel = BY_ID["rank-collapse.relative-error"]
    assert "Linformer" in rel.whose and rel.check == "rank-collapse.low-rank-log-n" and rel.survives == "partly"


def test_the_notes_residual_is_recorded_as_defined_and_no_convexity_claim_is_attributed():
    r = BY_ID["rank-collapse.residual-argmin"]
    assert "argmin_x ||X - 1 x'||_2" in r.says and "row mean" in r.correct and r.whose == "the text"
    assert not any("convex" in e.says for e in ERRATA)  # the notes' 2-norm argmin is convex; no text says otherwise


def test_no_record_for_the_triangle_inequality_the_notes_only_ask_about():
    """The notes do not claim that the composite norm satisfies the triangle inequality: §2.4
    problem 2 asks the question. The old record rank-collapse.composite-norm-name ("||X||_{1,inf}
    ... is the 'composite norm' of a matrix", measured by rank-collapse.composite-norm-triangle)
    counted attnlab's answer as an error of the text; it is removed, and no record names that
    claim, whose row is attnlab's own statement (issue 33)."""
    assert "rank-collapse.composite-norm-name" not in BY_ID
    assert not [e.id for e in ERRATA if "composite-norm-triangle" in e.check]
    assert not [e.id for e in ERRATA if "composite norm'" in e.says or "triangle" in e.witness]
    (c,) = select_claims(["rank-collapse.composite-norm-triangle"])
    assert not c.anchor and not c.erratum


def test_every_differs_claim_names_a_record_of_this_paper():
    """Each differs claim evidences one record (several may share it); each record it names exists."""
    records = {e.id for e in ERRATA}
    named = {}
    for c in select_claims(["rank-collapse"]):
        if c.anchor:
            assert c.falsifier.strip(), c.id
        if c.erratum:
            assert c.erratum in records, (c.id, c.erratum)
            named[c.id] = c.erratum
    assert named == {"rank-collapse.eq9-sign-error": "rank-collapse.eq9-sign",
                     "rank-collapse.lemma-a3-sandwich": "rank-collapse.lemma-a3-threshold",
                     "rank-collapse.low-rank-log-n": "rank-collapse.relative-error",
                     "rank-collapse.minilm-attention-spectrum": "rank-collapse.low-rank-any-layer"}
