"""memorization.regression (Fig. 5): a tiny run that shares its cell between the panels, bad configs."""

from __future__ import annotations

import pytest

from attnlab.cli import main
from attnlab.errors import ConfigError
from attnlab.papers.memorization.experiments.regression import RegressionConfig, run as run_regression

TRAIN = dict(d=8, n=4, steps=150, lr=2e-2, warmup=10, replicates=2, eval_every=10)


def test_tiny_regression_run_reuses_the_shared_cell():
    # T = half the bound: at the bound itself, fitting real labels needs saturated softmaxes and
    # takes gradient descent far longer than a test may (test_losses.py trains one)
    cfg = RegressionConfig(H_grid=(1, 2), H=2, n_grid=(2, 4), T_factors=(0.5,), mse_tol=1e-2, **TRAIN)
    res = run_regression(cfg)
    # it lists its deviations, and every text row names them (inconclusive: no control run)
    assert {r.verdict for r in res.summary if r.deviations} == {"inconclusive"}
    assert [d.id for d in res.deviations] == ["another-model", "optimizer", "step-budget", "size"]
    cells = res.data["cells"]
    # H panel (1, 4), (2, 4) and n panel (2, 2), (2, 4): the point (H=2, n=4) is trained once;
    # T = round(bound / 2) with bounds 4, 7, 3
    assert sorted((c["H"], c["n"], c["T"]) for c in cells) == [(1, 4, 2), (2, 2, 2), (2, 4, 4)]
    for c in cells:  # U(0, 1) labels (variance 1/12 = 0.083) fitted to MSE <= 1e-2
        assert c["memorized"] == [True, True] and max(c["final_mse"]) <= 1e-2
        assert all(1 <= s <= TRAIN["steps"] for s in c["steps_to_memorize"])
    pH, pn = res.data["panels"]
    assert pH["largest_T_memorized"] == [2, 4] and pn["largest_T_memorized"] == [2, 4]
    # the grid stops below the bound and its top was memorized: T* >= 2 (>= 4) is a lower bound that
    # cannot decide T* >= bound either way (it was a FAIL when the grid top was read as T* itself)
    bound_rows = [r for r in res.summary if r.quantity.startswith("largest T memorized, ")]
    assert len(bound_rows) == 4 and {r.verdict for r in bound_rows} == {"inconclusive"}
    assert [r.measured_text for r in bound_rows] == [">= 2", ">= 4", ">= 2", ">= 4"]
    # gradient descent reaching Theorem 1's existence bound: attnlab's own statement, not the text's
    assert {(r.role, r.anchor) for r in bound_rows} == {("own", "")}
    # Fig. 5's "monotonicity with H and n", on eqs. (1)-(6) on the raw tokens: another model, inconclusive
    mono = [r for r in res.summary if r.quantity.startswith("adjacent ")]
    assert len(mono) == 2 and {(r.anchor, r.verdict) for r in mono} == {("memorization.fig5-caption", "inconclusive")}
    assert {r.deviations[0] for r in mono} == {"another-model"}
    assert res.figures[0].yscale == "log" and len(res.figures) == 4
    assert res.tables[0].columns[6] == "mean final MSE"


@pytest.mark.parametrize("bad, message", [
    (dict(mse_tol=0), r"mse_tol must be a finite number in \(0, inf\), got 0"),
    (dict(H_grid=()), "H_grid must be a non-empty list of integers >= 1"),
])
def test_bad_config(bad, message):
    with pytest.raises(ConfigError, match=message):
        RegressionConfig(**bad)


def test_bad_config_via_the_cli(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["sweep", "memorization.regression", "--set", "mse_tol=-1", "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1
    assert err[0].startswith("attnlab: error: ") and "mse_tol must be a finite number in (0, inf)" in err[0]
