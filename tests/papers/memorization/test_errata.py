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


def test_b2_record_quotes_the_index_where_the_text_has_it():
    """App. B.2 writes E^(t)T theta_delta^(t+T'): the stray T' is on theta's example index, not on the row
    of Z''_a,delta (the old record misquoted it as [Z''_a,delta]_{t+T'})."""
    (b2,) = [e for e in ERRATA if e.id == "memorization.b2-row-index"]
    assert "theta_delta^(t+T')" in b2.says and "]_{t+T'}" not in b2.says
    assert "theta_delta^(t)" in b2.correct and "example t + T'" in b2.witness


def test_no_record_for_the_induction_rows_which_the_proof_chooses():
    """App. B's induction step picks the fresh rows among those dependent on the first rank Z' rows, so
    they lie in the row space of Z'_a by choice: the old record 'induction-row-space' described attnlab's
    fixed blocks of examples, not an omission of the text."""
    assert "memorization.induction-row-space" not in {e.id for e in ERRATA}
    assert "memorization.induction-row-space" not in {e.id for e in all_errata(["memorization"])}


def test_the_benchmarks_readme_does_not_blame_the_papers_optimizer():
    """benchmarks/README.md measured the plain d_v = 64 model, another model than the authors' released
    d_v = 1 one: it cannot say that the paper's numbers are a limit of the paper's optimizer."""
    from pathlib import Path

    readme = Path(__file__).resolve().parents[3] / "benchmarks" / "README.md"
    if not readme.is_file():
        import pytest

        pytest.skip(f"{readme} is not in this tree")
    text = " ".join(readme.read_text(encoding="utf-8").split())
    assert "a limit of its optimizer settings, not of the model" not in text
    assert "another model than the paper's" in text and "d_v = 1 per head" in text
