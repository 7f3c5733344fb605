"""memorization.saturation (Fig. 3, App. H): a tiny run, deviations, presets, bad configs (the saturation
statistics by hand: tests/papers/memorization/test_saturation.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.papers.memorization.experiments.saturation import (
    EXPERIMENT_ID,
    SaturationConfig,
    run as run_saturation,
)
from attnlab.runs.rundir import RunDir

TINY = dict(H_grid=(2,), Ts=(12,), released_Ts=(12,), d=8, n=4, n_classes=10, max_steps=300, min_steps=0, lr=3e-2,
            warmup=10)


def test_tiny_run(tmp_path, storable):
    rd = RunDir.create(tmp_path / "run")
    res = run_saturation(SaturationConfig(**TINY), rd)
    assert set(res.to_dict()) == {"summary", "tables", "figures", "notes", "data", "deviations"}
    storable(res)
    assert [d.id for d in res.deviations] == ["full-batch-adam", "step-budget", "plain-model", "size", "another-t"]
    assert len(rd.read_metrics()) == 2
    released, plain = res.data["per_H"]  # both models, the released one first
    assert (released["model"], plain["model"]) == ("released", "plain")
    for r in (released, plain):
        assert r["H"] == 2 and r["T"] == 12 and r["bound"] == 2 * (4 - 1) + 1 and r["memorized"]
        assert 1 <= r["memorized_at"] == r["steps"] < 300  # min_steps 0: measured when it memorizes
        assert sum(r["heads_histogram"]) == 12 and sum(r["max_theta_histogram"]) == 2 * 12
        frac = r["fraction_saturated"]
        assert 0.0 <= frac <= 1.0 and r["max_theta_histogram"][-1] == round(frac * 24)
        assert r["at_memorization"]["fraction_saturated"] == frac
    rows = res.summary
    assert len(rows) == 6 and [c.verdict for c in rows[::3]] == ["info", "info"]  # memorized: descriptive
    # H = 2, d = 8, n = 4 at T = 12 by full-batch Adam: deviations from App. H's run, no control
    assert [c.verdict for c in rows[1:3]] == ["inconclusive", "inconclusive"]
    assert rows[1].deviations == ("full-batch-adam", "step-budget", "size", "another-t") and not rows[1].cannot_decide
    # at the searched maximal T the released model's rows are compared with the text's reading of Fig. 3, and
    # judged only at App. H's sizes and 300k steps: this tiny model (H = 2, d = 8, n = 4) cannot decide it ...
    res = run_saturation(SaturationConfig(**{**TINY, "released_Ts": (0,)}))
    released, plain = res.data["per_H"]
    rows = res.summary
    assert released["searched"] and released["T"] >= 7 and not plain["searched"]
    majority, almost_all = rows[1], rows[2]
    assert majority.relation == ">" and majority.threshold == 0.5 and majority.verdict == "inconclusive"
    assert majority.deviations == ("full-batch-adam", "step-budget", "size")  # searched: the T is no deviation
    assert majority.measured == released["fraction_saturated"]
    assert almost_all.relation == ">=" and almost_all.threshold == 0.9
    assert almost_all.measured == released["fraction_with_unsaturated"]
    # each reading is anchored to the sentence it checks (Fig. 3's caption, App. H's text)
    assert (majority.anchor, almost_all.anchor) == ("memorization.fig3-majority-saturated",
                                                    "memorization.apph-unsaturated-head")
    assert [c.anchor for c in rows[4:6]] == [majority.anchor, almost_all.anchor]
    # ... the plain model's cannot decide them: it is not the authors' model (the deviation "plain-model")
    assert [c.verdict for c in rows[4:6]] == ["inconclusive", "inconclusive"]
    assert all("plain-model" in c.deviations for c in rows[4:6])
    assert len(res.figures) == 6 and len({f.file for f in res.figures}) == 6  # one set per model
    assert len(res.tables) == 2 and len(res.tables[0].rows) == min(20, released["T"])
    assert len(res.tables[1].rows) == 12


def test_a_model_that_did_not_memorize_cannot_decide(tmp_path):
    cfg = SaturationConfig(**{**TINY, "max_steps": 2, "warmup": 1, "models": ("released",), "Ts": (40,),
                              "released_Ts": (40,)})
    res = run_saturation(cfg)
    (r,) = res.data["per_H"]
    assert not r["memorized"]
    assert [c.verdict for c in res.summary] == ["info", "inconclusive", "inconclusive"]
    assert "did not memorize" in res.summary[1].cannot_decide


def test_app_h_size_and_t_leave_only_the_optimizer_and_the_budget():
    """Issue 34: at App. H's sizes and T the released model's rows are touched by the full-batch optimizer and
    the budget only (was "trained N steps, not 300,000" as free text); the quick preset's T = 250 at H = 4 is a
    T of its own (App. H: 550)."""
    from attnlab.papers.memorization.experiments.saturation import deviations

    quick = {d.id: d for d in deviations(SaturationConfig())}
    assert list(quick) == ["full-batch-adam", "step-budget", "plain-model", "another-t"]
    assert quick["another-t"].what.startswith("the released model at T=250 (H=4), 550 (H=8); App. H")
    assert quick["step-budget"].control == "--set min_steps=300000 --set max_steps=300000"
    paper = [d.id for d in deviations(SaturationConfig(scale="paper", models=("released",)))]
    assert paper == ["full-batch-adam", "step-budget"]


def test_registered_and_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is SaturationConfig
    quick, paper = SaturationConfig(), SaturationConfig(scale="paper")
    assert quick.H_grid == (4, 8) and quick.Ts == (550, 1300) and quick.min_steps == 500
    assert quick.released_Ts == (250, 550) and quick.models == ("released", "plain")
    assert paper.Ts == (0, 0) and paper.released_Ts == (0, 0) and paper.min_steps == paper.max_steps
    scfg = quick.search_config(4, "released")
    assert (scfg.model, scfg.d_v, scfg.keys, scfg.d_h) == ("authors", 1, "context", 64)


@pytest.mark.parametrize("bad, message", [
    (dict(H_grid=(4, 8), Ts=(550,)), "give one T per H"),
    (dict(H_grid=(4, 8), released_Ts=(550,)), "give one T per H"),
    (dict(models=("authors",)), "models must be distinct names among released, plain"),
    (dict(Ts=(550, -1)), "Ts (0 = search) must be a non-empty list of integers >= 0"),
    (dict(threshold=1.5), "threshold must be a finite number in (0, 1), got 1.5"),
    (dict(min_steps=5000), "min_steps (5000) must be at most max_steps (3000)"),
    (dict(lr=0.0), "lr must be a finite number in (0, inf), got 0.0"),
    (dict(scale="huge"), "scale must be one of"),
])
def test_bad_config(bad, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        SaturationConfig(**bad)


def test_bad_config_via_the_cli(cli_error, tmp_path):
    argv = ["sweep", EXPERIMENT_ID, "--set", "threshold=2", "--out", str(tmp_path / "s")]
    assert "threshold must be a finite number in (0, 1), got 2" in cli_error(argv)
