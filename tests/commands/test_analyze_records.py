"""heads.json's typed records store the names heads.json has always had: a head's scores flat after its
layer and head, "self" and "vertical+diagonal" for the fields Python cannot name so, and what a head lacks
(no DLA, no ablation) left out rather than stored as null."""

from __future__ import annotations

import dataclasses
import json

from attnlab.commands.analyze.records import (
    ChanceLevels,
    ExactAblation,
    HeadRow,
    HeadScores,
    KovalevaScores,
)

SCORES = HeadScores(*(0.5 + i for i in range(len(dataclasses.fields(HeadScores)))))
KOV = KovalevaScores(0.1, 0.2, 0.3, float("nan"))


def _row(**changes) -> HeadRow:
    row = HeadRow(2, 3, SCORES, ["previous"], "diagonal", KOV, [], 0.25, 0.0, 1, 0.4, 0.3, None, 0.9, 0.7, 2.0,
                  3.0, {"entropy": [0.1, 0.2]})
    return dataclasses.replace(row, **changes)


def test_a_row_is_stored_flat_with_heads_json_names():
    d = _row().to_dict()
    assert list(d)[:4] == ["layer", "head", "entropy", "uniform_entropy"] and d["self"] == 4.5 and "self_" not in d
    assert list(d)[22:] == ["clark", "kovaleva", "kovaleva_scores", "voita", "voita_argmax_previous",
                            "voita_argmax_next", "kv_head", "sink", "sink_norm", "copying",
                            "copying_positive_fraction", "qk_norm", "ov_norm", "ci"]  # no dla, no ablations
    assert d["kovaleva_scores"]["vertical+diagonal"] == 0.3 and d["repeated_induction_stripe"] == 19.5


def test_what_a_head_has_is_stored_where_heads_json_had_it():
    d = _row(dla=-1.5, ablation={"zero": ExactAblation(0.125, (0.0, 0.25))}).to_dict()
    assert list(d)[29:32] == ["sink", "sink_norm", "dla"] and d["dla"] == -1.5
    assert d["ablation"] == {"zero": {"delta_loss": 0.125, "ci": [0.0, 0.25], "measured": "exact"}}
    assert "ablation_estimate" not in d and "induction_ablation" not in d


def test_chance_levels_are_keyed_as_the_heads():
    d = ChanceLevels(SCORES, 0.1, 0.2, KOV, 1 / 3).to_dict()
    assert list(d)[:2] == ["entropy", "uniform_entropy"] and list(d)[-4:] == [
        "voita_argmax_previous", "voita_argmax_next", "kovaleva_scores", "sink"]
    assert json.loads(json.dumps(d))["self"] == 4.5
