"""The adversarial rank search and Proposition 4's skip layer (papers/memorization/rank_search.py)."""

from __future__ import annotations

import numpy as np
import torch

from attnlab.analysis.kruskal import kruskal_rank
from attnlab.papers.memorization.rank_search import adversarial_rank_search, skip_layer_outputs


def test_skip_layer_adds_the_context_mean():
    rng = np.random.default_rng(7)
    E, e = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 5))
    E_out, e_out = skip_layer_outputs(E, e)
    np.testing.assert_allclose(e_out, e + E.mean(axis=1), rtol=0, atol=1e-14)
    np.testing.assert_allclose(E_out, E + E.mean(axis=1, keepdims=True), rtol=0, atol=1e-14)


def test_skip_layer_fails_without_assumption3():
    # a shared context and identical queries: e~ identical, so Assumption 1 still fails after the layer
    rng = np.random.default_rng(8)
    E = np.broadcast_to(rng.uniform(size=(3, 6)), (8, 3, 6)).copy()
    e = np.tile(E[0, 0], (8, 1))
    _, e_out = skip_layer_outputs(E, e)
    assert kruskal_rank(e) == 1 and kruskal_rank(e_out) == 1


def test_search_finds_violations_of_a_false_bound():
    # the search is not toothless: claimed bound H(n-1) (one less than the truth) is broken
    rng = np.random.default_rng(3)
    E, e = rng.uniform(size=(3, 7)), rng.uniform(size=(12, 7))
    threads = torch.get_num_threads()
    found = adversarial_rank_search(E, e, 3, 7, 6, seed=0)
    assert found["max_rank"] == 7 and found["max_ratio_above_bound"] > 1e-6
    assert found["attempts"] == 4 * 6 + 3 * 40  # random draws at 4 scales + 3 ascents of 40 steps
    assert torch.get_num_threads() == threads  # one thread while it runs, restored afterwards
