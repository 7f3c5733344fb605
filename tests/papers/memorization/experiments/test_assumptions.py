"""memorization.assumptions on a small configuration: the numbers the maths fixes (identical [CLS]
queries at the embedding, mixing after one layer), the tables and figures, and bad input (also via
the CLI: exit 2, one stderr line)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.papers.memorization.experiments.assumptions import (
    CHECKS,
    EXPERIMENT_ID,
    LAYERS,
    AssumptionsConfig,
    assumption_tests,
    run_assumptions,
)
from attnlab.registry import get_experiment

SMALL = dict(T=60, n=9, d=64, n_heads=2, trials=400, gp_trials=10, estimate_trials=4, fig_T=70,
             fig_n=(6, 12), fig_d=(64, 96), fig_n_at_d=8)


@pytest.fixture(scope="module")
def result():
    cfg = AssumptionsConfig(layers=("embedding", "attention", "transformer"), **SMALL)
    return cfg, run_assumptions(cfg)


def test_registered():
    exp = get_experiment(EXPERIMENT_ID)
    assert exp.config_cls is AssumptionsConfig and exp.run is run_assumptions
    cfg = AssumptionsConfig()
    assert (cfg.T, cfg.n, cfg.d, cfg.trials, cfg.pass_fraction, cfg.rtol) == (500, 64, 384, 5000, 0.99, 1e-10)
    assert cfg.layers == tuple(LAYERS)


def test_random_layers_numbers(result):
    cfg, res = result
    lay = res.data["layers"]
    emb, att, tra = lay["embedding"], lay["attention"], lay["transformer"]
    # embedding: every query is the same [CLS] vector -> Kruskal rank 1, Assumption 1 fails in every trial
    assert emb["assumption1"]["fraction"] == 0.0 and emb["kruskal_estimate"]["estimate"] == 1
    assert emb["general_position"]["fraction"] == 0.0 and emb["general_position"]["method"] == "exact"
    # Assumption 3 (e + mean of the context) holds at the embedding; one layer then gives Assumption 1
    assert emb["assumption3"]["fraction"] == 1.0 and emb["assumption3"]["min_rel_sigma"] > 1e-6
    for r in (att, tra):
        assert r["assumption1"]["fraction"] == 1.0 and r["assumption1"]["min_rel_sigma"] > 1e-6
        assert r["assumption2"]["fraction"] == 1.0 and r["assumption2"]["min_rel_sigma"] > 1e-8
        assert r["kruskal_estimate"]["estimate"] == min(cfg.T, cfg.d)  # T = 60 queries in R^64
    for r in lay.values():
        assert r["shape"] == [60, 9, 64]
        assert r["assumption1"]["trials"] == 400 and r["assumption1"]["rtol"] == 1e-10
        assert r["assumption2"]["contexts"] == 60


def test_report_parts(result, tmp_path):
    from attnlab.reports.figures import render

    cfg, res = result
    for spec in res.figures:
        assert render(spec, tmp_path).path.stat().st_size > 5000  # a real PNG was drawn
    json.dumps(res.to_dict(), allow_nan=False)
    assert len(res.summary) == 3 * len(CHECKS)
    by_q = {row.quantity.split(" (")[0]: row for row in res.summary}
    # English text against ImageNet: agreement and disagreement alike are measured, but cannot decide Table 1
    a1 = by_q["assumption1 holds: embedding"]
    assert (a1.verdict, a1.outcome, a1.threshold) == ("inconclusive", True, False)  # ✗ in Table 1 and here
    gp = by_q["general position holds: attention"]
    assert (gp.verdict, gp.outcome, gp.measured, gp.threshold) == ("inconclusive", False, True, False)  # ✗ / ✓
    assert "ImageNet" in gp.cannot_decide and "ImageNet" in gp.reason
    assert by_q["assumption3 holds: attention"].verdict == "info"  # Table 1 reports none
    ours, paper = res.tables
    assert [r[0] for r in ours.rows] == ["embedding", "attention", "transformer"]
    assert len(ours.columns) == len(ours.formats) == len(ours.rows[0])
    assert paper.rows[0][3] == "✗ / ✗"  # Asm. 1 at the embedding: paper / ours
    fig = res.data["figure1"]
    assert fig["vs_n"]["n"] == [6, 12] and fig["vs_d"]["d"] == [64, 96]
    assert all(1 <= k <= min(cfg.fig_T, cfg.d) for k in fig["vs_n"]["estimate"])
    assert [f.file for f in res.figures] == ["memorization-kruskal-vs-n.png", "memorization-kruskal-vs-d.png"]
    assert any("learn their position table" in note for note in res.notes)


def test_assumption_tests_on_hand_built_data():
    # 30 examples, n = 5, d = 10: queries in a 4-dimensional subspace (Kruskal rank 4 < n), contexts
    # of rank n except one, e~ generic
    rng = np.random.default_rng(0)
    e = rng.standard_normal((30, 4)) @ rng.standard_normal((4, 10))
    E = rng.standard_normal((30, 5, 10))
    E[7, 4] = E[7, 0] - 2 * E[7, 1]
    cfg = AssumptionsConfig(T=30, n=5, d=10, n_heads=1, trials=300, gp_trials=10, estimate_trials=10,
                            fig_T=30, fig_n=(5,), fig_d=(64,), fig_n_at_d=5)
    r = assumption_tests(E, e, cfg, seed=0)
    assert r["assumption1"]["fraction"] == 0.0 and not r["assumption1"]["holds"]
    assert r["assumption2"]["fraction"] == 29 / 30 and not r["assumption2"]["holds"]
    assert r["assumption3"]["fraction"] == 1.0
    assert r["kruskal_estimate"]["estimate"] == 4
    assert r["general_position"]["method"] == "randomized" and r["general_position"]["fraction"] == 0.0


@pytest.mark.slow
def test_minilm_rows():
    cfg = AssumptionsConfig(layers=("minilm-L0", "minilm-L1"), **{**SMALL, "T": 40, "n": 12})
    lay = run_assumptions(cfg).data["layers"]
    assert lay["minilm-L0"]["assumption1"]["fraction"] == 0.0  # one [CLS] vector for every example
    assert lay["minilm-L0"]["assumption2"]["fraction"] == 1.0  # learned positions: contexts of rank n
    assert lay["minilm-L1"]["assumption1"]["fraction"] == 1.0 and lay["minilm-L1"]["shape"] == [40, 12, 384]


@pytest.mark.parametrize("kw, err, needle", [
    (dict(n=400), ConfigError, "needs n < d"),
    (dict(T=10, n=20), ConfigError, "T=10 must be at least n=20"),
    (dict(layers=("embedding", "vit")), UnknownNameError, "unknown layer 'vit'"),
    (dict(rtol=2.0), ConfigError, r"rtol must be a finite number in \(0, 1\)"),
    (dict(pass_fraction=0.0), ConfigError, "pass_fraction"),
    (dict(d=100), ConfigError, "divisible by n_heads=12"),
    (dict(fig_d=(48,)), ConfigError, "multiple of 32"),
    (dict(fig_n=(2,)), ConfigError, "fig_n must be a non-empty list of integers >= 5"),
    (dict(trials=0), ConfigError, "trials must be an integer >= 1"),
    (dict(scale="huge"), ConfigError, "scale must be one of"),
])
def test_bad_config(kw, err, needle):
    with pytest.raises(err, match=needle):
        AssumptionsConfig(**kw)


@pytest.mark.parametrize("setting, needle", [
    ("n=400", "the paper's setting needs n < d: got n=400, d=384; lower n"),
    ("trials=0", "trials must be an integer >= 1, got 0"),
])
def test_bad_config_via_the_cli(tmp_path, capsys, setting, needle):
    from attnlab.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", EXPERIMENT_ID, "--set", setting, "--executor", "inline", "--out", str(tmp_path / "s")])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


def test_minilm_rows_cannot_decide_bert_and_unreported_cells_are_info():
    from attnlab.papers.memorization.experiments.assumptions import _summary

    def r(holds):
        return {"holds": holds, "fraction": 1.0 if holds else 0.2, "method": "randomized", "trials": 10, "k": 4,
                "rtol": 1e-10, "min_rel_sigma": 1e-3}

    res = {"shape": [60, 9, 384], "general_position": r(False), "assumption1": r(True),
           "assumption2": {"holds": True, "fraction": 1.0, "contexts": 60, "rtol": 1e-10, "min_rel_sigma": 1e-3},
           "assumption3": r(True)}
    rows = _summary({"minilm-L1": res})
    # Table 3 (BERT-large, n = 512): GP ✗, A1 ✗, A2 ✓, A3 not reported
    assert [row.verdict for row in rows] == ["inconclusive", "inconclusive", "inconclusive", "info"]
    assert all("all-MiniLM-L6-v2" in row.cannot_decide for row in rows[:3])
    assert rows[1].measured is True and rows[1].threshold is False  # A1 holds here, fails in Table 3
