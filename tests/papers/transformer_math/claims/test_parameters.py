"""transformer-math.param-count-formula (§1.2.2, §1.2.5) and transformer-math.table1-counts (§2, Table 1)."""

import pytest

from attnlab.papers.transformer_math.table1 import table1_rows
from attnlab.registry import select_claims
from tolerances import FLOAT64

IDS = ["transformer-math.param-count-formula", "transformer-math.table1-counts"]


@pytest.fixture(scope="module")
def results():
    return {c.id: c.run(seed=0) for c in select_claims(IDS)}


def test_registered_with_where_statement_and_paper_value(results):
    assert sorted(results) == sorted(IDS)
    assert all(r.claim.where and r.claim.statement and r.claim.paper_value for r in results.values())


def test_param_count_formula(results):
    r = results["transformer-math.param-count-formula"]
    # attnlab's formula against attnlab's modules (the text prints no block count): sanity, unanchored
    assert r.verdict == "sanity", r.error
    assert r.check.measured == 0 and r.check.threshold == 0 and r.check.role == "sanity" and not r.claim.anchor
    assert r.check.values["modules_checked"] == 32  # 5 configs x 2 biases x 2 blocks + 3 x 2 x 2 models
    assert r.check.values["max_abs_difference"] == 0


def test_table1_counts(results):
    r = results["transformer-math.table1-counts"]
    assert r.verdict == "reproduced", r.error
    m = r.check
    assert m.threshold == 0.05 and m.role == "text" and m.where == "§2, Table 1"
    assert m.anchor == r.claim.anchor == "transformer-math.table-1" and m.falsifier and m.erratum == "none"
    assert m.measured == max(row["rel_error"] for row in table1_rows())
    assert m.measured == pytest.approx(1_557_611_200 / 1.5e9 - 1, rel=FLOAT64)  # GPT-2 XL is the loosest
    models = m.values["models"]
    assert list(models) == ["GPT-1", "BERT", "GPT-2", "GPT-3", "LaMDA", "Minerva"]
    assert models["GPT-2"]["computed"] == 1_557_611_200 and models["GPT-2"]["paper_value"] == 1.5e9
    assert m.values["max_rel_error"] == m.measured
