"""Which rows of the memorization paper speak for the text: each claim's and experiment's anchor.

A row anchored to a ledger entry (src/attnlab/papers/memorization/ledger.toml) checks that
quoted statement of the text; attnlab's own statements (gradient descent reaching Theorem 1's
existence bound) are role own and never anchored. Read from the registry, without running.
"""

from __future__ import annotations

import pytest

from attnlab.registry import all_claims, all_constructions, all_errata, get_experiment, paper_ledger
from attnlab.registry.coverage import paper_coverage

CLAIMS = {  # claim -> (the ledger entry it checks, the erratum a differs evidences)
    "memorization.theorem1-construction": ("memorization.theorem-1", ""),
    "memorization.proposition1-rank": ("memorization.proposition-1", ""),
    "memorization.proposition2-shared-upper": ("memorization.proposition-2", ""),
    "memorization.proposition3-reduction": ("memorization.appf-reduction", "memorization.appF-map-sign"),
    "memorization.proposition3-fcn-trained": ("memorization.proposition-3", ""),
    "memorization.proposition3-attention-beside": ("memorization.theorem-1", ""),
    "memorization.proposition4-skip": ("memorization.proposition-4", ""),
    "memorization.proposition5-constant-rowsum": ("memorization.proposition-5", ""),
}

EXPERIMENTS = {  # experiment -> the ledger entries its anchored rows check
    "memorization.construction": {"memorization.theorem-1"},
    "memorization.capacity-vs-heads": {"memorization.fig2a-r2"},
    "memorization.capacity-vs-context": {"memorization.fig2-observed"},
    "memorization.capacity-vs-head-size": {"memorization.fig2-caption", "memorization.fig2c-no-benefit"},
    "memorization.general-position": {"memorization.appi1-linear-heads"},
    "memorization.regression": {"memorization.fig5-caption"},
    "memorization.saturation": {"memorization.fig3-majority-saturated", "memorization.apph-unsaturated-head"},
    "memorization.authors-capacity": {"memorization.apph-550", "memorization.apph-1300"},
    "memorization.fcn-vs-attention": {"memorization.proposition-3"},
    "memorization.assumptions": {"memorization.table1-embedding", "memorization.table1-rand-attention",
                                 "memorization.table1-rand-vit", "memorization.asm3-embedding",
                                 "memorization.table3-general-position", "memorization.table3-assumption1",
                                 "memorization.table3-assumption2"},
    # descriptive rows, and on the released model at App. H's T the like-for-like row of App. H's number
    "memorization.training-options": {"memorization.apph-550", "memorization.apph-1300"},
}


def test_every_claim_checks_a_quoted_statement():
    claims = {c.id: c for c in all_claims() if c.paper == "memorization"}
    assert set(claims) == set(CLAIMS)
    records = {e.id for e in all_errata(["memorization"])}
    for cid, (anchor, erratum) in CLAIMS.items():
        c = claims[cid]
        assert (c.anchor, c.erratum) == (anchor, erratum), cid
        assert c.falsifier.strip() and anchor in paper_ledger("memorization")
        assert not erratum or erratum in records


@pytest.mark.parametrize("experiment, anchors", sorted(EXPERIMENTS.items()))
def test_experiments_declare_the_entries_their_rows_check(experiment, anchors):
    assert set(get_experiment(experiment).anchors) == anchors


def test_the_construction_realises_theorem1_or_remark1():
    (c,) = [c for c in all_constructions() if c.paper == "memorization"]
    assert c.anchors == ("memorization.theorem-1", "memorization.remark-1")


def test_the_ledger_is_accounted_for_and_checks_the_theorems():
    cov = paper_coverage("memorization")
    assert not cov.unaccounted and len(cov.entries) >= 140
    checked = {e.statement.id for e in cov.entries if e.checked}
    for s in ("theorem-1", "proposition-1", "proposition-2", "proposition-3", "proposition-4", "proposition-5",
              "remark-1", "apph-550", "apph-1300", "fig2a-r2"):
        assert f"memorization.{s}" in checked, s
    # Theorem 1 is an existence statement; the text warns that GD need not find its weights (App. A),
    # which is why gradient descent's T* against the bound is attnlab's own statement
    assert not paper_ledger("memorization").get("memorization.appa-gd-caveat").executable
