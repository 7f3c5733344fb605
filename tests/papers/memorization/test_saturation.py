"""Softmax saturation (papers/memorization/saturation.py, App. H, Fig. 3): the statistics on hand-made
theta, and a tiny model measured after it memorizes (H = 2, d = 8, n = 4, T = 12, 10 classes)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnlab.errors import ConfigError
from attnlab.papers.memorization.capacity_search import SearchConfig
from attnlab.papers.memorization.saturation import (
    GRID_EXAMPLES,
    max_theta_edges,
    measure_saturation,
    saturation_stats,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

# counts are exact; fractions are ratios of small integers, exact to float64 rounding
EXACT = 1e-15


def test_saturation_stats_on_a_hand_made_theta():
    # T = 3 examples, H = 2 heads, n = 3 tokens
    theta = np.array([
        [[0.995, 0.004, 0.001], [0.5, 0.3, 0.2]],  # head 1 saturated, head 2 not
        [[0.009, 0.991, 0.0], [0.0, 0.0, 1.0]],  # both saturated
        [[0.99, 0.01, 0.0], [0.4, 0.4, 0.2]],  # 0.99 is not > 0.99: none saturated
    ])
    s = saturation_stats(theta, 0.99)
    assert np.array_equal(s.max_theta, [[0.995, 0.5], [0.991, 1.0], [0.99, 0.4]])
    assert np.array_equal(s.saturated, [[True, False], [True, True], [False, False]])
    assert s.saturated_per_example.tolist() == [1, 2, 0]
    assert s.heads_histogram.tolist() == [1, 1, 1]  # examples with 0, 1, 2 saturated heads
    assert abs(s.fraction_saturated - 3 / 6) < EXACT
    assert abs(s.fraction_with_unsaturated - 2 / 3) < EXACT
    hist = s.max_theta_histogram.tolist()
    edges = max_theta_edges(0.99)
    assert len(hist) == len(edges) - 1 == 21
    expected = [0] * 21
    expected[8] += 1  # 0.4 in [0.40, 0.45)
    expected[10] += 1  # 0.5 in [0.50, 0.55)
    expected[19] += 1  # 0.99 in [0.95, 0.99]
    expected[20] += 3  # 0.995, 0.991, 1.0 in (0.99, 1]
    assert hist == expected and sum(hist) == theta.shape[0] * theta.shape[1]


def test_threshold_moves_the_top_bin():
    theta = np.array([[[0.96, 0.04], [0.5, 0.5]]])
    s = saturation_stats(theta, 0.95)
    assert s.saturated.tolist() == [[True, False]] and s.max_theta_histogram[-1] == 1
    assert max_theta_edges(0.95)[-3:] == (0.9, 0.95, 1.0)
    with pytest.raises(ConfigError, match=re.escape("theta must be (T, H, n)")):
        saturation_stats(np.ones((2, 3)))


TINY = SearchConfig(H=2, d=8, n=4, n_classes=10, max_steps=300, lr=3e-2, warmup=10)


@pytest.mark.parametrize("model", ["plain", "released"])
def test_a_tiny_model_measured_after_it_memorizes(model):
    kind = dict(model="authors", d_v=1, keys="context") if model == "released" else {}
    scfg = TINY.replace(**kind)
    r = measure_saturation(scfg, 12, model, min_steps=0, threshold=0.99)
    assert (r.model, r.H, r.T, r.searched, r.bound) == (model, 2, 12, False, 2 * (4 - 1) + 1)
    assert r.memorized and r.accuracy == 1.0 and 1 <= r.memorized_at == r.steps < 300  # stops when it memorizes
    for s in (r.final, r.at_memorization):
        assert s.max_theta.shape == s.saturated.shape == (12, 2)
        assert np.all((1 / 4 - 1e-12 <= s.max_theta) & (s.max_theta <= 1 + 1e-12))  # a softmax over n = 4 tokens
        assert s.heads_histogram.sum() == 12 and s.max_theta_histogram.sum() == 24
        assert s.max_theta_histogram[-1] == s.saturated.sum() == round(s.fraction_saturated * 24)
    d = r.to_dict()
    assert len(d["max_theta_first_examples"]) == min(GRID_EXAMPLES, 12)
    assert d["at_memorization"]["fraction_saturated"] == r.at_memorization.fraction_saturated
    assert d["heads_histogram"] == r.final.heads_histogram.tolist()


def test_a_search_that_memorizes_nothing_is_refused(monkeypatch):
    import types

    import attnlab.papers.memorization.saturation as saturation

    searched = []
    monkeypatch.setattr(saturation, "search_capacity",
                        lambda scfg: searched.append(scfg) or types.SimpleNamespace(largest_success=0))
    with pytest.raises(ConfigError, match="no T >= 1 memorized at H=2 within 300 steps: raise max_steps"):
        measure_saturation(TINY, 0, "plain")
    assert searched == [TINY]  # T = 0: the search's largest success is the T measured
