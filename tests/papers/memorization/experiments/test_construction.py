"""memorization.construction: Theorem 1's weights built, checked and reported."""

import numpy as np
import pytest

from attnlab.errors import ConfigError
from attnlab.papers.memorization.experiments.construction import (
    ERROR_TARGET,
    ConstructionConfig,
    build_one,
    numpy_forward,
    run_construction,
)
from attnlab.papers.memorization.model import draw_dataset, memorization_forward

TINY = dict(d=16, n=6, d_h=8, H_shared=(1, 3), H_per_example=(2,), H_labels=2, n_classes=20)


def test_numpy_forward_matches_the_model_forward():
    rng = np.random.default_rng(0)
    for shared in (True, False):
        E, e, _ = draw_dataset(7, 5, 9, 1, shared=shared, seed=1)
        w = dict(W_Q=rng.normal(size=(3, 9, 4)), W_K=rng.normal(size=(3, 9, 4)), W_V=rng.normal(size=(3, 9, 2)),
                 W_O=rng.normal(size=(6, 9)), W_D=rng.normal(size=(9, 3)))
        np.testing.assert_allclose(numpy_forward(E, e, **w), memorization_forward(E, e, **w), rtol=1e-12, atol=1e-12)


def test_tiny_run_passes_every_row():
    out = run_construction(ConstructionConfig(**TINY))
    builds = out["data"]["builds"]
    assert [(b["H"], b["context"]) for b in builds] == [(1, "shared"), (3, "shared"), (2, "per-example"),
                                                        (2, "shared"), (2, "shared")]
    for b in builds:
        assert b["T"] == b["H"] * (6 - 1) + 1 and b["rank_Z"] == b["T"]
        assert max(b["max_abs_error"], b["numpy_max_abs_error"]) <= ERROR_TARGET
    classes = [b for b in builds if b["labels"] == "classes"][0]
    assert classes["d_out"] == 20 and classes["accuracy"] == 1.0  # 20 classes > d = 16: the +-s_i codes
    assert all(row["status"] == "pass" for row in out["summary"])
    assert {f["file"] for f in out["figures"]} == {"memorization-construction-error.png",
                                                    "memorization-construction-conditioning.png"}


@pytest.mark.slow
def test_paper_size_twenty_heads_shared_context():
    """d = 64, n = 32, d_h = 64, H = 20: T = 621 real labels to 1e-8 by both forwards."""
    row = build_one(ConstructionConfig(), 20, shared=True)
    assert row["T"] == 621 and row["rank_Z"] == 621
    assert row["max_abs_error"] <= ERROR_TARGET and row["numpy_max_abs_error"] <= ERROR_TARGET


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=16, d=16), "needs n < d"),
    (dict(n_classes=33, d=16, n=6), "n_classes must lie in 2..2d = 32"),
    (dict(H_shared=(0,)), "H_shared"),
    (dict(d_h=0), "d_h must be an integer >= 1"),
])
def test_bad_config(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ConstructionConfig(**kwargs)
