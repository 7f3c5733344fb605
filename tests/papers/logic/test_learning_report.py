"""logic.learning's outcome and its tables' statistics, on records built by hand (no training)."""

import numpy as np

from attnlab.papers.logic.experiments.learning import LearningConfig
from attnlab.papers.logic.lbfgs_training import Trained
from attnlab.papers.logic.learning_report import Outcome, sensitivity_rows, spread
from attnlab.papers.logic.members import Member, members
from tolerances import FLOAT64


def test_spread_is_median_range_and_quartiles():
    assert spread([5.0, 1.0, 4.0, 2.0, 3.0]) == (3.0, 1.0, 5.0, 2.0, 4.0)
    md, lo, hi, q1, q3 = spread(np.array([0.0, 1.0]))  # linear interpolation between the two
    assert (md, lo, hi) == (0.5, 0.0, 1.0) and abs(q1 - 0.25) <= FLOAT64 and abs(q3 - 0.75) <= FLOAT64


def _record(cfg: LearningConfig) -> Trained:
    """A record of ``members(cfg)`` whose final log10 MSE is the member's index (histories of one step)."""
    mem = members(cfg)
    main = {n: [j for j, m in enumerate(mem) if m.group == "main" and m.name == n] for n in dict.fromkeys(
        m.name for m in mem)}
    return Trained(mem, [], {}, np.arange(len(mem), dtype=float)[None], main, 0.0)


def test_sensitivity_rows_and_median_final():
    cfg = LearningConfig(N=3, M=7, batch=11, test_batch=5, seeds=3, sweep_seeds=2, sweep_weights=(10.0,),
                         sweep_lrs=(0.5,))
    tr = _record(cfg)
    # main: 3 seeds x 7 members (indices 0-20); the sweep: per seed 3 lean at lambda 10, then 4 at lr 0.5
    assert tr.members[21] == Member("lambda=10", "lean-1", 0, (10.0, 0.0, 0.0), 1.0)
    rows = sensitivity_rows(cfg, tr)
    assert [r[:3] for r in rows] == [["lambda=10", f, 2] for f in ("lean-1", "lean-2", "lean-3")] + [
        ["lr=0.5", f, 2] for f in ("lean-1", "lean-2", "lean-3", "free")]
    # lambda=10, lean-1: members 21 (seed 0) and 28 (seed 1); the main lean-1 of seeds 0, 1: members 3 and 10
    assert rows[0][3:] == [24.5, 21.0, 28.0, 6.5]
    # lr=0.5, free: members 27 and 34; the main free of seeds 0, 1: members 6 and 13
    assert rows[-1][3:] == [30.5, 27.0, 34.0, 9.5]
    out = Outcome(cfg, tr, [], None, None)
    assert out.median_final("free") == 13.0 and out.median_final("system 1") == 7.0  # (6, 13, 20), (0, 7, 14)


def test_no_sweep_no_rows():
    cfg = LearningConfig(N=3, M=7, batch=11, test_batch=5, seeds=2, sweep_seeds=0)
    assert sensitivity_rows(cfg, _record(cfg)) == []
