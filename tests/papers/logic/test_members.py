"""The models §4.1 trains and their tasks: counts, order, extra-loss weights, the rng per seed index, the masks."""

import numpy as np
import torch

from attnlab.papers.logic.experiments.learning import LearningConfig
from attnlab.papers.logic.members import FLAVOURS, SYSTEMS, Member, member_masks, members, system_of, task

TINY = dict(N=3, M=7, batch=11, test_batch=5, seeds=2, sweep_seeds=1, sweep_weights=(10.0, 2.0), sweep_lrs=(0.5,),
            extra_weight=0.25, lr=1.0)


def test_members_main_runs_first_then_the_sweep():
    mem = members(LearningConfig(**TINY))
    # 2 seeds x (3 systems + 4 flavours), then 1 sweep seed x (2 lambdas x 3 lean + 1 lr x 4 flavours)
    assert len(mem) == 2 * 7 + 2 * 3 + 4
    assert [m.name for m in mem[:7]] == list(SYSTEMS + FLAVOURS) and mem[7].seed_index == 1
    assert mem[3] == Member("main", "lean-1", 0, (0.25, 0.0, 0.0), 1.0)
    assert mem[5] == Member("main", "lean-3", 0, (0.0, 0.0, 0.25), 1.0)
    assert mem[6].lam == (0.0, 0.0, 0.0) and all(m.lam == (0.0, 0.0, 0.0) for m in mem[:3])
    assert [(m.group, m.name, m.lam) for m in mem[14:17]] == [("lambda=10", "lean-1", (10.0, 0.0, 0.0)),
                                                             ("lambda=10", "lean-2", (0.0, 10.0, 0.0)),
                                                             ("lambda=10", "lean-3", (0.0, 0.0, 10.0))]
    assert [(m.group, m.name, m.lr, m.lam) for m in mem[20:]] == [
        ("lr=0.5", f, 0.5, (0.25 if f == "lean-1" else 0.0, 0.25 if f == "lean-2" else 0.0,
                            0.25 if f == "lean-3" else 0.0)) for f in FLAVOURS]
    assert len(members(LearningConfig())) == 42  # the quick preset: 5 x 7 + 7


def test_task_is_its_seed_indexs_draw():
    cfg = LearningConfig(**TINY)
    t0, t0b, t1 = task(cfg, 0), task(cfg, 0), task(cfg, 1)
    assert t0.q_true.shape == (3, 3) and t0.tokens.shape == t0.Y.shape == (11, 7)
    assert t0.test.shape == t0.Y_test.shape == (5, 7)
    assert np.array_equal(t0.tokens, t0b.tokens) and np.array_equal(t0.q_true, t0b.q_true)
    assert not np.array_equal(t0.q_true, t1.q_true)
    rng = np.random.default_rng([cfg.seed, 1])  # the rng (seed, i): q_true is its first draw
    assert np.array_equal(t1.q_true, rng.standard_normal((3, 3)))
    # Y_1 = 0, Y_i = q_true(X_{i-1}, X_i)
    assert np.all(t0.Y[:, 0] == 0) and t0.Y[2, 4] == t0.q_true[t0.tokens[2, 3], t0.tokens[2, 4]]


def test_member_masks_follow_the_system_and_system_2s_b():
    assert [system_of(n) for n in SYSTEMS + ("free", "lean-2")] == ["1", "2", "3", "combined", "combined"]
    full = member_masks(LearningConfig(**TINY), "system 2")
    diag = member_masks(LearningConfig(**TINY, system2_B="diagonal"), "system 2")
    d = 3 + 7
    assert float(full["B"].sum()) == full["B"].numel() and float(diag["B"].sum()) == d
    # system 2: q, k read categories, so k^t q lives in the CC block
    assert float(full["q"][:, 3:].abs().sum()) == 0 and float(full["q"][:, :3].sum()) == full["q"][:, :3].numel()
    comb = member_masks(LearningConfig(**TINY), "lean-1", dtype=torch.float32)
    assert comb["q"].dtype == torch.float32 and all(float(v.min()) == 1.0 for v in comb.values())
