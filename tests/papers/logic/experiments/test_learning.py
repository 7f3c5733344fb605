"""logic.learning at tiny configs: real training numbers, determinism, the report's parts, bad configs."""

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.logic.experiments.learning import (EXPERIMENT_ID, FLAVOURS, LearningConfig, Member, penalties,
                                                       run, task, train_all)
from attnlab.papers.logic.model import init_params, masks
from attnlab.registry import get_experiment

TINY = dict(N=3, M=6, batch=40, iterations=8, seeds=1, test_batch=20, sweep_weights=(10.0,), sweep_lrs=(0.5,),
            sweep_seeds=0, dtype="float64")


def test_registered():
    assert get_experiment(EXPERIMENT_ID).config_cls is LearningConfig


def test_paper_scale_is_the_spec():
    cfg = LearningConfig(scale="paper")
    assert (cfg.N, cfg.M, cfg.batch, cfg.iterations) == (10, 50, 1000, 50) and cfg.seeds >= 5
    quick = LearningConfig()
    assert (quick.N, quick.M, quick.iterations) == (10, 50, 50)


def test_training_lowers_the_loss_and_is_deterministic():
    cfg = LearningConfig(**TINY)
    mem = [Member("main", "free", 0, (0.0, 0.0, 0.0), 1.0), Member("main", "system 2", 0, (0.0, 0.0, 0.0), 1.0)]
    tasks = [task(cfg, 0)]
    p1, h1 = train_all(cfg, mem, tasks)
    p2, h2 = train_all(cfg, mem, tasks)
    assert torch.equal(h1, h2) and all(torch.equal(p1[k], p2[k]) for k in p1)
    var_y = float(np.var(tasks[0]["Y"]))
    # free model: 8 L-BFGS iterations take the MSE from 0.91 Var(Y) (after 1) to 0.63 Var(Y) (measured)
    assert float(h1[-1, 0]) < 0.7 * var_y
    assert float(h1[-1, 0]) < 0.8 * float(h1[0, 0])
    # the restricted system never leaves its access pattern
    A = p1["k"][1].T @ p1["q"][1]
    m = masks("2", 3, 6)
    A_eff = (p1["k"][1] * m["k"]).T @ (p1["q"][1] * m["q"])
    assert float(A_eff[3:].abs().max()) == 0 and A.shape == (9, 9)


def test_penalties_vanish_on_the_hand_built_structures():
    N, M = 3, 6
    p = init_params(N, M, torch.Generator().manual_seed(0))
    m3 = masks("3", N, M)
    e = {k: p[k] * m3[k] if k in m3 else p[k] for k in p}
    P = penalties(e, N, M)
    assert float(P[2]) <= 1e-12  # system 3's access pattern is solution 3's structure
    assert float(P[1]) >= 1.0  # and entirely outside solution 2's (A in PP, v in CC)


def test_run_tiny(storable):
    res = run(LearningConfig(**dict(TINY, sweep_seeds=1)))
    stored = storable(res)
    assert {f.file for f in res.figures} == {"fig1-system2-ktq-vs-qtrue.png", "fig2-log-mse-per-flavour.png"}
    assert res.check("hand-built solutions").status == "pass"
    assert max(res.data["hand_built_mse"].values()) < 1e-20
    assert set(res.data["final_log10_mse"]) == {"system 1", "system 2", "system 3", *FLAVOURS}
    assert len(res.tables) == 5 and len(res.tables[4].rows) == 3 + 4  # lambda sweep (3 lean), lr sweep (4)
    assert "fractions" in stored["data"] and len(res.data["ablations"]["full model"]) == 1


@pytest.mark.slow
def test_quick_size_system1_learns():
    """N = 10, M = 50 as in the text, batch 100, 50 L-BFGS iterations: system 1 (positions route, B decides)
    ends at MSE <= 0.45 Var(Y) (measured 0.30-0.34 Var(Y) over 3 seeds at the quick scale)."""
    cfg = LearningConfig(batch=100, seeds=1, sweep_seeds=0, test_batch=50)
    mem = [Member("main", "system 1", 0, (0.0, 0.0, 0.0), 1.0)]
    tasks = [task(cfg, 0)]
    _, h = train_all(cfg, mem, tasks)
    var_y = float(np.var(tasks[0]["Y"]))
    assert float(h[-1, 0]) <= 0.45 * var_y
    assert float(h[-1, 0]) <= 0.5 * float(h[0, 0])


@pytest.mark.parametrize("changes, message", [
    (dict(N=1), "N must be an integer in"),
    (dict(M=2), "M must be an integer in"),
    (dict(batch=0), "batch must be an integer >= 1"),
    (dict(sweep_weights=(0.0,)), "every value of sweep_weights must be"),
    (dict(sweep_lrs=(-1.0,)), "every value of sweep_lrs must be"),
    (dict(extra_weight=-1.0), "extra_weight must be"),
    (dict(lr=0.0), "lr must be"),
    (dict(norm="batchnorm"), "norm must be one of layernorm, none"),
    (dict(dtype="float16"), "dtype must be one of float32, float64"),
    (dict(sweep_weights=1.0), "sweep_weights must be a list"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        LearningConfig(**changes)
