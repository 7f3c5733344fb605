"""The ledgers: each text's statements quoted verbatim, every entry accounted for, every anchor known."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.checks import Check, equals, near
from attnlab.errors import ConfigError
from attnlab.ledger import KINDS, Ledger, Statement, normalise, parse
from attnlab.registry import all_claims, all_constructions, all_experiments, paper_ledger, papers
from attnlab.registry.coverage import paper_coverage

TEXTS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"
PAPERS = sorted(p.name for p in papers().values() if p.package.startswith("attnlab.papers."))


def _text(paper: str) -> str:
    if not TEXTS.is_dir():
        pytest.skip(f"the texts are not beside the repository ({TEXTS}): quotes are checked where they are")
    return (TEXTS / papers()[paper].file).read_text(encoding="utf-8")


@pytest.mark.parametrize("paper", PAPERS)
def test_every_quote_is_found_in_its_text(paper):
    ledger = paper_ledger(paper)
    missing = ledger.missing_quotes(_text(paper))
    assert not missing, "quotes not in the text (whitespace normalised): " + "; ".join(
        f"{s.id}: {s.quote[:80]!r}" for s in missing)


@pytest.mark.parametrize("paper", PAPERS)
def test_every_paper_has_a_ledger_and_every_entry_is_accounted_for(paper):
    cov = paper_coverage(paper)
    assert len(cov.entries) >= 10, f"{paper}: a ledger of the text's statements (ledger.toml in its package)"
    assert not cov.unaccounted, f"{paper}: entries checked by no row and carrying no reason: {cov.unaccounted}"
    assert cov.checked + cov.not_executable == len(cov.entries)


@pytest.mark.parametrize("paper", PAPERS)
def test_each_anchor_names_an_entry_of_its_own_papers_ledger(paper):
    ids = {s.id for s in paper_ledger(paper)}
    for c in all_claims():
        if c.paper == paper and c.anchor:
            assert c.anchor in ids and c.falsifier.strip(), c.id
    for e in all_experiments():
        if e.paper == paper:
            assert set(e.anchors) <= ids, e.id
    for c in all_constructions():
        if c.paper == paper:
            assert set(c.anchors) <= ids, c.name


def test_a_quote_differs_only_by_whitespace():
    s = Statement("toy.a", "Theorem 1", "theorem", "For  $Pd \\geq N^k$ ,\n there exists")
    led = Ledger("toy", (s,))
    assert led.missing_quotes("**Theorem 1.** *For $Pd \\geq N^k$ , there exists matrices*") == []
    assert led.missing_quotes("For $Pd \\geq N^L$ , there exists") == [s]
    assert normalise(" a \n\t b  ") == "a b"


def test_a_ledger_parses_from_toml_and_refuses_what_it_cannot_read():
    led = parse("toy", "[[statement]]\nid = 'thm-1'\nwhere = 'Theorem 1'\nkind = 'theorem'\nquote = '''x = y'''\n"
                       "[[statement]]\nid = 'def-a'\nwhere = '§1'\nkind = 'definition'\nquote = 'A is'\n"
                       "reason = 'a definition: what the checks implement'\n")
    assert [s.id for s in led] == ["toy.thm-1", "toy.def-a"]
    assert led.get("toy.thm-1").executable and not led.get("toy.def-a").executable
    assert "toy.def-a" in led and len(led) == 2
    for bad, says in [("[[statement]]\nid = 'x'\nwhere = 'w'\nkind = 'poem'\nquote = 'q'\n", "kind must be"),
                      ("[[statement]]\nid = 'x'\nwhere = 'w'\nkind = 'number'\n", "lacks quote"),
                      ("[[statement]]\nid = 'X y'\nwhere = 'w'\nkind = 'number'\nquote = 'q'\n", "must be '<paper>"),
                      ("[[statement]]\nid = 'x'\nwhere = 'w'\nkind = 'number'\nquote = 'q'\nsay = 1\n", "unknown field"),
                      ("[[statement]]\nid = 'x'\nwhere = 'w'\nkind = 'number'\nquote = 'q'\n" * 2, "appears twice"),
                      ("[[statement]\n", "not valid TOML"), ("[other]\n", "unknown table")]:
        with pytest.raises(ConfigError, match=says):
            parse("toy", bad)
    with pytest.raises(ConfigError, match="not in the ledger"):
        led.get("toy.nothing")
    assert set(KINDS) >= {"theorem", "number", "statement", "definition"}


def test_a_text_row_needs_an_anchor_and_a_falsifier():
    with pytest.raises(ConfigError, match="needs an anchor"):
        equals(3, 3)
    with pytest.raises(ConfigError, match="falsifier"):
        equals(3, 3, anchor="toy.thm-1")
    with pytest.raises(ConfigError, match="cannot be anchored"):
        equals(3, 3, role="own", anchor="toy.thm-1")
    with pytest.raises(ConfigError, match="cannot be anchored"):
        equals(3, 3, role="sanity", anchor="toy.thm-1", falsifier="x")
    with pytest.raises(ConfigError, match="only a text row"):
        equals(3, 3, role="own", erratum="toy.e")
    c = equals(3, 3, anchor="toy.thm-1", falsifier="a count other than 3")
    assert c.verdict == "reproduced" and c.group == "text"
    stored = Check.from_dict(c.to_dict())
    assert (stored.anchor, stored.falsifier, stored.verdict) == ("toy.thm-1", "a count other than 3", "reproduced")
    # a row stored before rows were anchored reads back as it was stored
    old = {k: v for k, v in c.to_dict().items() if k not in ("anchor", "falsifier", "erratum", "group")}
    assert Check.from_dict(old).verdict == "reproduced"


def test_roles_give_their_verdicts_and_groups():
    own = near(0.31, 0.3, 0.05, role="own")
    assert (own.verdict, own.group) == ("holds", "own")
    assert near(0.5, 0.3, 0.05, role="own").verdict == "refuted"
    assert near(0.5, 0.3, 0.05, role="own", cannot_decide="2 seeds").verdict == "inconclusive"
    assert near(float("nan"), 0.3, 0.05, role="own").verdict == "fail"
    built = equals(1, 1, role="construction")
    assert (built.verdict, built.group) == ("sanity", "sanity")
    theorem = equals(1, 1, role="construction", anchor="toy.thm-1", falsifier="weights that do not memorize")
    assert (theorem.verdict, theorem.group) == ("reproduced", "text")
    assert equals(0, 1, role="construction", anchor="toy.thm-1", falsifier="x").verdict == "fail"


# The rows an independent expert reading found labelled as reproductions although no text states
# them, or although they cannot fail (issue: "every row anchored to the text"). Each is counted
# apart from the texts' rows now; the paper's own tests say why, row by row.
NOT_THE_TEXTS = {
    "sanity": ["transformer-math.decoder-causal", "transformer-math.favor-unbiased",
               "transformer-math.head-permutation-assignment", "transformer-math.head-projection-exact",
               "transformer-math.head-roles-clark-voita", "transformer-math.head-roles-kovaleva",
               "transformer-math.head-roles-patterns", "transformer-math.head-sigma-fits-exact",
               "transformer-math.head-structure-baselines", "transformer-math.param-count-formula",
               "transformer-math.sparse-fast-path-exact",
               "rank-collapse.minilm-projection",  # its rate is -1/2 for any matrix: it cannot fail
               "rank-collapse.two-norm-residual", "logic.stationary-set"],
    "own": ["transformer-math.jl-random-projection",  # the 1/k slope cannot fail; what it judges is attnlab's
            "rank-collapse.low-rank-additive", "rank-collapse.composite-norm-triangle",
            "invertibility.any-w", "invertibility.fewer-heads-rank-Pd", "invertibility.no-positions-cap",
            "logic.category-degenerate"],
}


@pytest.mark.parametrize("group, claim_id", [(g, c) for g, ids in NOT_THE_TEXTS.items() for c in ids])
def test_rows_that_no_text_states_or_that_cannot_fail_are_not_reproductions(group, claim_id):
    (c,) = [c for c in all_claims() if c.id == claim_id]
    r = c.run(0)
    assert not c.anchor and r.check.group == group and r.verdict not in ("reproduced", "differs"), (claim_id, r.verdict)
