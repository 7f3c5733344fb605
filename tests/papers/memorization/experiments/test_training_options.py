"""memorization.training-options: presets, a tiny run's results, bad configs (Python and CLI)."""

from __future__ import annotations

import itertools
import math

import pytest

from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.papers.memorization.experiments.training_options import (
    EXPERIMENT_ID,
    OPTIONS,
    OptionRun,
    TrainingOptionsConfig,
    app_h_row,
    deviations,
    run as run_training_options,
)
from attnlab.runs.rundir import RunDir


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


# d=8, n=4, d_h=8, H=2: bound 2 (4 - 1) + 1 = 7; T=10 with batch 8 (minibatches) and 3 classes.
# With seed 0 every option memorizes well inside its budget (Adam 20-70 of 300 updates, L-BFGS 2 of 15)
TINY = dict(seed=0, d=8, n=4, H=2, n_classes=3, T=10, batch=8, steps=300, lr=2e-2, fast_lr=5e-2, lbfgs_steps=15,
            replicates=2, eval_every=10)


def test_registered_and_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is TrainingOptionsConfig
    cfg = TrainingOptionsConfig()
    assert (cfg.d, cfg.n, cfg.d_h, cfg.H, cfg.n_classes) == (64, 32, 64, 4, 100)
    assert cfg.bound == 125 and cfg.T == 250 and cfg.minibatch is None  # T < 256: full batch
    assert cfg.lr == 1e-3 and cfg.batch == 256 and cfg.options == OPTIONS
    paper = TrainingOptionsConfig(scale="paper")
    assert paper.steps == 300_000 and paper.T == 550 and paper.minibatch == 256


def test_tiny_run_has_every_option(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    res = run_training_options(TrainingOptionsConfig(**TINY), rd)
    assert set(res.to_dict()) == {"summary", "tables", "figures", "notes", "data", "deviations"}
    assert [d.id for d in res.deviations] == ["another-model", "size", "optimizer", "step-budget"]
    runs = {r["option"]: r for r in res.data["runs"]}
    assert list(runs) == list(OPTIONS) and res.data["bound"] == 7 and res.data["batch"] == 8
    table = res.tables[0]
    assert [row[0] for row in table.rows] == list(OPTIONS)
    for row in table.rows:
        assert all(math.isfinite(v) for v in row[4:]), row  # wall s, per model, accuracy
    for name, r in runs.items():
        assert r["models"] == (2 if name.startswith("replicates") else 1)
        # T = 10 > bound 7 is memorized by every option within its budget
        assert r["final_accuracy"] == [1.0] * r["models"], name
        budget = TINY["lbfgs_steps"] if "lbfgs" in name else TINY["steps"]
        every = 1 if "lbfgs" in name else TINY["eval_every"]  # L-BFGS is checked after every step
        assert all(1 <= s <= budget and s % every == 0 for s in r["steps_to_100"]), name
        t = r["curve_t"]
        assert t[0] == 0.0 and all(b >= a for a, b in itertools.pairwise(t)) and len(t) == len(r["curve_acc"])
        assert r["curve_acc"][-1] == 1.0 and r["curve_acc"][0] < 1.0
        assert r["curve_acc"][0] == pytest.approx(sum(r["initial_accuracy"]) / r["models"], abs=1e-6)
    # the same two models at once or one at a time: the same training up to float32 reduction order,
    # so steps to 100% agree within one evaluation interval
    for b, s in zip(runs["replicates-batched"]["steps_to_100"], runs["replicates-sequential"]["steps_to_100"]):
        assert abs(b - s) <= TINY["eval_every"]
    assert runs["authors"]["steps_to_100"][0] == runs["replicates-sequential"]["steps_to_100"][0]
    # descriptive rows: the text states no number for this cell (App. H's ~550 is authors-capacity's row)
    assert [c.verdict for c in res.summary] == ["info"] * (len(OPTIONS) + 1)  # the options and the speed-up
    assert res.summary[0].values["steps_to_100"] == runs["authors"]["steps_to_100"]
    assert res.figures[0].file == "memorization-training-options.png"
    assert len(res.figures[0].series) == len(OPTIONS)
    assert len(rd.read_metrics()) == len(OPTIONS)


def _authors_run(final_accuracy: float, steps_to_100: int) -> OptionRun:
    return OptionRun(steps_to_100=[steps_to_100], wall_s=1.0, final_accuracy=[final_accuracy], initial_accuracy=[0.01],
                     curve_t=[0.0], curve_acc=[0.01], option="authors", models=1)


@pytest.mark.parametrize("H, T, accuracy, verdict", [
    (4, 550, 1.0, "reproduced"),   # App. H: T = 550 memorized at H = 4 after 300k steps
    (8, 1300, 0.97, "differs"),    # the text's protocol, like for like, short of 100%: App. H's T not memorized
])
def test_the_released_model_at_app_h_t_under_the_authors_protocol_decides_app_h(H, T, accuracy, verdict):
    """Issue 34: the like-for-like control of authors-capacity's App. H rows. With the released model (d_v = 1,
    the query's key masked), App. H's size and T, and the paper preset (Adam lr 1e-3, batch 256, 300,000
    steps), the authors' option departs from nothing and its row is decided."""
    cfg = TrainingOptionsConfig(scale="paper", options=("authors",), d_v=1, keys="context", H=H, T=T)
    assert deviations(cfg) == []
    row = app_h_row(cfg, _authors_run(accuracy, 120_000 if accuracy == 1.0 else -1))
    assert (row.verdict, row.anchor, row.deviations) == (verdict, f"memorization.apph-{T}", ())
    assert row.paper_value == f"T={T} memorized after 300,000 steps" and row.falsifier


def test_a_shorter_budget_or_the_default_model_is_a_deviation():
    """Fewer steps than App. H's 300,000 (or the d_v = d_h model) touch the row: inconclusive without a control,
    however the run ends."""
    short = TrainingOptionsConfig(scale="paper", options=("authors",), d_v=1, keys="context", steps=50_000)
    assert [d.id for d in deviations(short)] == ["step-budget"]
    row = app_h_row(short, _authors_run(1.0, 40_000))
    assert (row.verdict, row.deviations, row.outcome) == ("inconclusive", ("step-budget",), True)
    assert [d.id for d in deviations(TrainingOptionsConfig(scale="paper"))] == ["another-model"]


def test_subset_of_options_full_batch(tmp_path):
    cfg = TrainingOptionsConfig(**{**TINY, "batch": 256, "options": ("full-batch-adam",)})
    assert cfg.minibatch is None
    res = run_training_options(cfg)
    assert [r["option"] for r in res.data["runs"]] == ["full-batch-adam"]
    assert res.data["runs"][0]["final_accuracy"] == [1.0]
    assert any("whole data set" in note for note in res.notes)


@pytest.mark.parametrize("bad, message", [
    (dict(options=("authors", "adam")), "options must be distinct names among"),
    (dict(options=("authors", "authors")), "options must be distinct names among"),
    (dict(keys="query"), "keys must be one of all, context"),
    (dict(d=7), "d must be even"),
    (dict(fast_lr=0.0), "fast_lr must be a finite number in (0, inf), got 0.0"),
    (dict(warmup_frac=1.0), "warmup_frac must be a finite number in [0, 1), got 1.0"),
    (dict(T=0), "T must be an integer >= 1"),
    (dict(replicates=True), "replicates must be an integer >= 1"),
    (dict(scale="huge"), "scale must be one of"),
])
def test_bad_config(bad, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        TrainingOptionsConfig(**bad)


def test_bad_config_via_the_cli(cli_error, tmp_path):
    argv = ["sweep", EXPERIMENT_ID, "--set", "keys=query", "--out", str(tmp_path / "s")]
    assert "keys must be one of all, context, got 'query'" in cli_error(argv)
