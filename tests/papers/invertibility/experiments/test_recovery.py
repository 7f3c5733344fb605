"""invertibility.recovery at a tiny config: no error at zero noise or below the guarantees,
chance-level errors at huge noise, determinism, bad configs."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.embeddings import explicit_embeddings
from attnlab.papers.invertibility.matrix import attention_matrix, default_w, qk_matrices
from attnlab.papers.invertibility.experiments.recovery import HUGE, RecoveryConfig, run
from tolerances import FLOAT64

TINY = dict(cases=("2:3:2", "2:4:4"), w_values=(1.0,), levels=(1e-12, 1e-8, 1e-4, 1e-2, 1e-1, HUGE), draws=8,
            hp_max_rows=16)


@pytest.fixture(scope="module")
def result():
    return run(RecoveryConfig(**TINY))


def test_error_rates(result, storable):
    storable(result)
    for r in result.data["rows"]:
        assert r["levels"][0] == 0.0 and r["nearest"][0] == 0.0 and r["least_squares"][0] == 0.0
        assert r["nearest"][1] == 0.0 and r["least_squares"][1] == 0.0  # 1e-12 is below both guarantees
        chance = 1 - 1 / r["rows"]
        assert r["nearest"][-1] >= 0.8 * chance and r["least_squares"][-1] >= 0.8 * chance
        assert 0 < r["sigma_guarantee"] < r["sep_guarantee"] <= r["median_sep"]
        # nearest row survives far more noise than least squares
        assert r["cross_least_squares"] < r["cross_nearest"]
    small = result.data["rows"][0]  # (2,3,2), P = 4, w = 1: recompute both guarantees
    A = attention_matrix(*explicit_embeddings(2, 3, 2), qk_matrices(default_w(4, 1.0), 2))
    norms = np.linalg.norm(A, axis=1)
    sigma = np.linalg.svd(A, compute_uv=False)
    assert small["float_resolved"]
    assert small["sigma_guarantee"] == pytest.approx(sigma[-1] / (2 * norms.max()), rel=1e-9)
    assert small["sep_guarantee"] == pytest.approx(min(
        np.linalg.norm(A[t] - A[s]) / (2 * norms[t]) for t in range(8) for s in range(8) if s != t), rel=FLOAT64)
    # consistency checks of attnlab's decoders: no row states the text
    assert {c.verdict for c in result.summary} == {"sanity", "info"} and not any(c.anchor for c in result.summary)
    below = result.check("cases with a nearest-row error below the guarantee")
    assert below.verdict == "sanity" and below.measured == 0
    # noise 10 times the row drowns every row: the row cannot fail, a sanity check (was construction -> reproduced)
    noise = result.check("error rate at relative noise")
    assert noise.measured >= 0.9 and (noise.role, noise.verdict) == ("sanity", "sanity")


def test_rate_table_has_a_row_per_noise_level(result):
    rates, rows = result.tables[1], result.data["rows"]
    assert list(rates.columns) == ["relative noise", "(2,3,2) w=1", "(2,4,4) w=1"]
    assert [line[0] for line in rates.rows] == ["0", "1e-12", "1e-08", "1e-04", "1e-02", "1e-01", f"{HUGE:.0e}"]
    assert rates.rows[0][1:] == ["0.00 / 0.00"] * 2
    for i, line in enumerate(rates.rows):
        for cell, r in zip(line[1:], rows):
            nearest, least_squares = map(float, cell.split(" / "))
            assert nearest == pytest.approx(r["nearest"][i], abs=0.005 + FLOAT64)  # printed to 2 decimals
            assert least_squares == pytest.approx(r["least_squares"][i], abs=0.005 + FLOAT64)


def test_deterministic(result):
    again = run(RecoveryConfig(**TINY))
    assert again.data == result.data


@pytest.mark.parametrize("changes, message", [
    (dict(cases=("4:6:2",)), "max_rows"),
    (dict(levels=(0.0,)), "every entry of levels must be"),
    (dict(levels=()), "at least one positive"),
    (dict(draws=0), "draws must be"),
    (dict(max_rows=1), "max_rows must be"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        RecoveryConfig(**changes)
