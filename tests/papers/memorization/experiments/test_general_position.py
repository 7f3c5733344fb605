"""memorization.general-position (App. I.1, Fig. 4): a tiny run without an n panel, bad configs."""

from __future__ import annotations

import pytest

from attnlab.cli import main
from attnlab.errors import ConfigError
from attnlab.papers.memorization.experiments.general_position import GeneralPositionConfig, run as run_general_position

TRAIN = dict(d=8, n=4, steps=150, lr=2e-2, warmup=10, replicates=2, eval_every=10)


def test_tiny_general_position_run():
    cfg = GeneralPositionConfig(H_grid=(1, 2), H=1, n_grid=(), T_factors=(1.0,), **TRAIN)
    assert cfg.n_grid == () and cfg.CONTEXT == "per-example"
    res = run_general_position(cfg)
    # it lists its deviations, and every text row names them (inconclusive: no control run)
    assert {r.verdict for r in res.summary if r.deviations} == {"inconclusive"}
    assert [d.id for d in res.deviations] == ["another-model", "optimizer", "step-budget", "size"]
    (p,) = res.data["panels"]  # empty n_grid: no n panel
    assert p["bound"] == [4, 7] and p["largest_T_memorized"] == [4, 7]
    ratio = next(r for r in res.summary if r.quantity.startswith("T* / (H(d-1)+1)"))
    # H (d - 1) + 1 = 8, 15 at d = 8; the one-point grids' tops were memorized: lower bounds
    assert p["censored"] == [True, True] and ratio.measured == f">= {4 / 8:.2f}, >= {7 / 15:.2f}"
    assert ratio.verdict == "info"
    # T* >= H(min(n, d_h)-1)+1 is attnlab's own statement (gradient descent reaches the existence bound)
    bound_rows = [r for r in res.summary if r.quantity.startswith("largest T memorized, ")]
    assert len(bound_rows) == 2 and {r.role for r in bound_rows} == {"own"}
    # App. I.1's "the linearity in H still remains": the H panel's monotonicity, anchored, another model
    (mono,) = [r for r in res.summary if r.quantity.startswith("adjacent H values")]
    assert (mono.anchor, mono.verdict) == ("memorization.appi1-linear-heads", "inconclusive")
    assert mono.deviations == ("another-model", "optimizer", "step-budget", "size") and mono.control == ""
    assert res.figures[1].series[-1].y == [8, 15]  # H (d - 1) + 1 beside the bound


def test_bad_config_via_the_cli(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["sweep", "memorization.general-position", "--set", "H=0", "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1
    assert err[0].startswith("attnlab: error: ") and "H must be an integer >= 1, got 0" in err[0]


def test_n_grid_above_d_is_refused():
    with pytest.raises(ConfigError, match="every n in n_grid must be <= d=8"):
        GeneralPositionConfig(H_grid=(1,), H=1, n_grid=(4, 16), T_factors=(1.0,), **TRAIN)
