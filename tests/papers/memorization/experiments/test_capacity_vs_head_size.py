"""memorization.capacity-vs-head-size (Fig. 2(c)): the T axis, a tiny run, "no gain beyond d_h > n" by
hand, bad configs (Python and CLI)."""

from __future__ import annotations

import pytest

from attnlab.cli import main
from attnlab.errors import ConfigError
from attnlab.papers.memorization.capacity_report import monotone_row, panel
from attnlab.papers.memorization.experiments.capacity_vs_head_size import (
    FLAT_ANCHOR,
    MONOTONE_ANCHOR,
    HeadSizeConfig,
    flat_beyond_n,
    run as run_head_size,
)


def test_one_T_axis_for_every_head_size():
    cfg = HeadSizeConfig()  # quick: H = 2, n = 32, T_factors 1..4 of H (n - 1) + 1 = 63
    assert cfg.T_grid(2, 32, 64) == [63, 126, 189, 252]
    assert cfg.T_grid(2, 32, 8) == [15, 63, 126, 189, 252]  # plus its own bound 2 (8 - 1) + 1


def test_tiny_run_gives_a_cell_per_head_size_and_T_and_bounds_where_censored(storable):
    cfg = HeadSizeConfig(d=8, n=4, H=1, d_h_grid=(2, 8), T_factors=(1.0,), steps=150, lr=2e-2, warmup=10,
                         replicates=1, eval_every=10)
    res = run_head_size(cfg)
    storable(res)  # it lists its deviations; a touched row names them
    assert [d.id for d in res.deviations] == ["another-model", "optimizer", "step-budget", "size"]
    p = res.data["panel"]
    assert p["values"] == [2, 8] and p["bound"] == [2, 4]  # H (min(n, d_h) - 1) + 1
    cells = res.data["cells"]
    assert sorted({c["d_h"] for c in cells}) == [2, 8] and all(c["H"] == 1 and c["n"] == 4 for c in cells)
    for d_h, largest, top, censored in zip(p["values"], p["largest_T_memorized"], p["grid_top"], p["censored"]):
        mine = [c for c in cells if c["d_h"] == d_h]
        assert top == max(c["T"] for c in mine)  # the largest T trained at this head size
        assert largest == max([c["T"] for c in mine if all(c["memorized"])], default=0)
        assert censored == (largest == top)  # memorized at the grid's top: a lower bound only
    assert not {c.verdict for c in res.summary} & {"fail", "error"}
    # T* >= bound: attnlab's own statement (gradient descent reaches Theorem 1's existence bound)
    bound_rows = [r for r in res.summary if r.quantity.startswith("largest T memorized, ")]
    assert len(bound_rows) == 2 and {(r.role, r.anchor) for r in bound_rows} == {("own", "")}


def test_flat_beyond_n_and_monotone_rows_by_hand(panel_cells):
    cfg = HeadSizeConfig(d=8, n=4, H=2, d_h_grid=(2, 4, 8, 16), flat_tol=0.5, T_factors=(1.0,), steps=20,
                         warmup=0)
    cells = panel_cells([2, 4, 8, 16], [4, 10, 14, 16])
    p = panel(cfg, cells, "d_h", cfg.d_h_grid, cfg.H)
    assert p["bound"] == [3, 7, 7, 7]  # 2 (min(4, d_h) - 1) + 1
    assert p["largest_T_memorized"] == [4, 10, 14, 16]
    rows = flat_beyond_n(cfg, cells, p)
    # d_h = 8: (14 - 10) / 10 = +40% <= 50%; d_h = 16: +60% > 50%
    assert [r.outcome for r in rows] == [True, False]
    # §5.2's "no benefit beyond d_h > n", measured on eqs. (1)-(6) on the raw tokens (d_v = d_h): the deviation
    # "another model" (and others), so the rows cannot decide the text's sentence (they were reproduced / differs)
    assert [r.verdict for r in rows] == ["inconclusive", "inconclusive"]
    assert {r.anchor for r in rows} == {FLAT_ANCHOR}
    assert all(r.deviations[0] == "another-model" and r.reason.startswith("deviations") for r in rows)
    assert abs(rows[0].measured - 0.4) < 1e-15 and abs(rows[1].measured - 0.6) < 1e-15
    assert rows[0].threshold == 0.5 and rows[0].relation == "<="
    # accuracy at the T both trained on: none in common here
    assert "nan" in rows[0].detail
    text = dict(anchor=MONOTONE_ANCHOR)
    assert monotone_row(p, **text).verdict == "reproduced"
    assert monotone_row({**p, "largest_T_memorized": [4, 10, 9, 16]}, **text).verdict == "differs"


@pytest.mark.parametrize("bad, message", [
    (dict(d_h_grid=(48, 64)), "d_h_grid needs a head size <= n=32"),
    (dict(d_h_grid=(0, 8)), "d_h_grid must be a non-empty list of integers >= 1"),
    (dict(flat_tol=-0.1), r"flat_tol must be a finite number in \[0, inf\), got -0.1"),
])
def test_bad_config(bad, message):
    with pytest.raises(ConfigError, match=message):
        HeadSizeConfig(**bad)


def test_bad_config_via_the_cli(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["sweep", "memorization.capacity-vs-head-size", "--set", "optimizer=sgd", "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1
    assert err[0].startswith("attnlab: error: ") and "optimizer must be one of adam, lbfgs" in err[0]
