"""Tables 1 and 3 as cells (papers/memorization/assumption_tables.py): every tested layer has the text's
four marks, and each judged row its ledger entry."""

from __future__ import annotations

import tomllib
from pathlib import Path

from attnlab.papers.memorization.assumption_tables import (
    ASM3_EMBEDDING,
    CHECKS,
    LAYERS,
    NA,
    NO,
    TABLE1_ANCHORS,
    TABLE3_ANCHORS,
    YES,
    row_anchor,
)

LEDGER = Path(__file__).parents[3] / "src" / "attnlab" / "papers" / "memorization" / "ledger.toml"


def test_every_layer_has_four_marks_and_a_counterpart():
    for layer, (source, counterpart, marks) in LAYERS.items():
        assert len(marks) == len(CHECKS) and set(marks) <= {YES, NO, NA}, layer
        assert counterpart.startswith("Table 1" if layer in TABLE1_ANCHORS else "Table 3"), layer
    # §5.1: Assumption 3 already holds at the embedding; Table 3 reports it for no layer
    assert LAYERS["embedding"][2] == (NO, NO, YES, YES)
    assert all(marks[3] == NA for layer, (_, _, marks) in LAYERS.items() if layer not in ("embedding",))
    # GPT-2's trained L1 fails Assumption 2 (App. J), its random L1 meets it
    assert LAYERS["smollm2-L1"][2][2] == NO and LAYERS["smollm2-random-L1"][2][2] == YES


def test_row_anchor():
    assert row_anchor("embedding", "assumption1") == "memorization.table1-embedding"
    assert row_anchor("embedding", "assumption3") == ASM3_EMBEDDING
    assert row_anchor("transformer", "general_position") == "memorization.table1-rand-vit"
    assert row_anchor("minilm-L1", "assumption2") == "memorization.table3-assumption2"
    assert row_anchor("smollm2-random-L0", "general_position") == "memorization.table3-general-position"


def test_anchors_are_ledger_entries():
    entries = {"memorization." + x["id"] for x in tomllib.loads(LEDGER.read_text())["statement"]}
    ids = {*TABLE1_ANCHORS.values(), *TABLE3_ANCHORS.values(), ASM3_EMBEDDING}
    assert len(ids) == 7 and ids <= entries, ids - entries
