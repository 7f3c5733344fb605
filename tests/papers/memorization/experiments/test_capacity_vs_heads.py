"""memorization.capacity-vs-heads: presets, a tiny run's results, bad configs (Python and CLI)."""

from __future__ import annotations

import math

import pytest

from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.papers.memorization.experiments.capacity_vs_heads import EXPERIMENT_ID, CapacityConfig, run_capacity
from attnlab.runs.rundir import RunDir

TINY = dict(d=8, n=4, n_classes=10, H_grid=(1, 2), T_factors=(1.0, 2.0), steps=150, lr=2e-2, warmup=10,
            replicates=2, eval_every=10)


def test_registered_and_quick_preset():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is CapacityConfig and e.reproduce_sweep is None
    cfg = CapacityConfig()
    assert (cfg.d, cfg.n, cfg.d_h, cfg.n_classes) == (64, 32, 64, 100)
    assert cfg.H_grid == (1, 2, 4) and cfg.T_grid(4) == [125, 250, 500, 750]
    paper = CapacityConfig(scale="paper")
    assert paper.batch == 256 and paper.lr == 1e-3 and 8 in paper.H_grid
    assert paper.min_epochs == 500 and paper.steps == 50_000 and paper.optimizer == "adam"  # App. A
    lbfgs = CapacityConfig(optimizer="lbfgs")
    assert lbfgs.batch is None and lbfgs.lr == 1.0 and lbfgs.H_grid == (1, 2, 4)
    # L-BFGS's preset comes first, so at paper scale it stays full batch (not the Adam preset's 256)
    lbfgs = CapacityConfig(scale="paper", optimizer="lbfgs")
    assert (lbfgs.batch, lbfgs.steps, lbfgs.lr, lbfgs.warmup, lbfgs.eval_every) == (None, 2_500, 1.0, 0, 50)


def test_tiny_run_memorizes_small_T(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    res = run_capacity(CapacityConfig(**TINY), rd)
    assert set(res.to_dict()) == {"summary", "tables", "figures", "notes", "data"}
    data = res.data
    assert data["H"] == [1, 2] and data["bound"] == [4, 7]  # H (4 - 1) + 1
    cells = {(c["H"], c["T"]): c for c in data["cells"]}
    assert set(cells) == {(1, 4), (1, 8), (2, 7), (2, 14)}
    for key in [(1, 4), (2, 7)]:  # T at the bound: gradient descent fits every label
        assert cells[key]["memorized"] == [True, True]
        assert cells[key]["final_accuracy"] == [1.0, 1.0]
        assert all(1 <= s <= TINY["steps"] for s in cells[key]["steps_to_memorize"])
    assert data["largest_T_memorized"][0] >= 4 and data["largest_T_memorized"][1] >= 7
    assert res.summary[0].measured == data["largest_T_memorized"][0]
    # T* >= H(r-1)+1 tests gradient descent against an existence theorem: attnlab's own statement (was reproduced)
    assert (res.summary[0].role, res.summary[0].verdict, res.summary[0].anchor) == ("own", "holds", "")
    assert data["censored"] == [t == top for t, top in zip(data["largest_T_memorized"], [8, 14])]
    assert res.figures[0].file == "memorization-capacity-vs-heads.png"
    # the paper's own plot: mean train accuracy vs T, one curve per H, on each H's T grid
    curves = res.figures[1]
    assert curves.file == "memorization-vs-T-per-heads.png"
    assert [s.label for s in curves.series] == ["H=1", "H=2"]
    assert curves.series[0].x == [4, 8] and curves.series[0].y[0] == 1.0
    assert len(res.tables[0].rows) == 4
    assert len(rd.read_metrics()) == 4


def test_authors_model_option_memorizes_at_the_bound():
    """model="authors" (embedding + sinusoidal PE + attention, read out at the query) trains in the
    same cells: at T = bound both replicates reach 100% train accuracy, and the notes say which model."""
    cfg = CapacityConfig(**{**TINY, "H_grid": (1,), "T_factors": (1.0,), "steps": 300}, model="authors")
    res = run_capacity(cfg)
    (cell,) = res.data["cells"]
    assert (cell["H"], cell["T"]) == (1, 4)
    assert cell["memorized"] == [True, True] and cell["final_accuracy"] == [1.0, 1.0]
    assert any("model=authors" in note for note in res.notes)
    assert any("model=plain" in note for note in run_capacity(CapacityConfig(**{**TINY, "H_grid": (1,),
                                                                                "T_factors": (1.0,)})).notes)


@pytest.mark.parametrize("bad, message", [
    (dict(model="bert"), "model must be one of plain, authors"),
    (dict(H_grid=(0, 2)), "H_grid must be a non-empty list of integers >= 1, got (0, 2)"),
    (dict(H_grid=(2, 2)), "H_grid must list distinct head counts"),
    (dict(T_factors=(1.0, -2.0)), "every factor in T_factors must be a finite number in (0, inf), got -2.0"),
    (dict(T_factors=()), "T_factors must list positive numbers"),
    (dict(steps=10, warmup=10), "warmup (10) must be smaller than steps (10)"),
    (dict(lr=math.inf), "lr must be a finite number in (0, inf), got inf"),
    (dict(n=1), "n must be an integer >= 2"),
    (dict(scale="huge"), "scale must be one of"),
])
def test_bad_config(bad, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CapacityConfig(**bad)


def test_bad_config_via_the_cli(cli_error, tmp_path):
    argv = ["sweep", EXPERIMENT_ID, "--set", "lr=-1", "--out", str(tmp_path / "s")]
    assert "lr must be a finite number in (0, inf), got -1" in cli_error(argv)
