"""Table 1 of the math text (§2): the six models' counts recomputed from their hyper-parameters."""

import pytest

from attnlab.papers.transformer_math.table1 import TABLE1, table1_rows


def test_table1_rows():
    rows = table1_rows()
    assert [r["model"] for r in rows] == ["GPT-1", "BERT", "GPT-2", "GPT-3", "LaMDA", "Minerva"]
    for r in rows:
        assert {"model", "release", "paper_value", "computed", "rel_error"} <= set(r)
        assert isinstance(r["paper_value"], float) and isinstance(r["computed"], int)
        assert r["rel_error"] == pytest.approx(abs(r["computed"] - r["paper_value"]) / r["paper_value"], rel=1e-15)
        assert r["rel_error"] < 0.05
    by = {r["model"]: r for r in rows}
    assert by["GPT-1"]["computed"] == 12 * (12 * 768**2 + 13 * 768) + (40478 + 512) * 768
    assert by["LaMDA"]["computed"] == 2**37 + (2 * 64 + 1) * 8192  # non-embedding
    assert by["GPT-2"]["computed"] == 1_557_611_200
    assert set(TABLE1) == set(by)
