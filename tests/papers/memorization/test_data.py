"""The §5.2 data draws (papers/memorization/data.py): shapes, ranges, nesting, seeds and bad sizes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.memorization.data import draw_dataset, draw_nested_dataset


@pytest.mark.parametrize("shared", [True, False])
def test_draw_dataset_shapes_ranges_and_assumptions(shared):
    E, e, y = draw_dataset(11, 5, 7, 3, shared=shared, seed=2)
    assert E.shape == ((5, 7) if shared else (11, 5, 7)) and e.shape == (11, 7) and y.shape == (11, 3)
    assert 0 <= min(E.min(), e.min()) and max(E.max(), e.max()) < 1  # U(0, 1) tokens and queries
    # U(0, 1) tokens: every context has rank n = 5 (Assumption 2) almost surely
    assert (np.linalg.matrix_rank(E if E.ndim == 3 else E[None]) == 5).all()
    again = draw_dataset(11, 5, 7, 3, shared=shared, seed=2)
    assert all(np.array_equal(a, b) for a, b in zip((E, e, y), again))


def test_nested_data_prefixes():
    E1, e1, y1 = draw_nested_dataset(40, 4, 6, 10, seed=7)
    E2, e2, y2 = draw_nested_dataset(17, 4, 6, 10, seed=7)
    assert torch.equal(E1, E2) and torch.equal(e1[:17], e2) and torch.equal(y1[:17], y2)
    assert 0 <= float(e1.min()) and float(e1.max()) < 1 and set(y1.tolist()) <= set(range(10))
    assert e1.dtype == torch.float32 and y1.dtype == torch.int64


@pytest.mark.parametrize("call, message", [
    (lambda: draw_dataset(0, 5, 7, 1, shared=True, seed=0), "T must be an integer >= 1"),
    (lambda: draw_dataset(3, 5, 7, True, shared=True, seed=0), "d_out must be an integer >= 1"),
    (lambda: draw_nested_dataset(3, 5, 7, 0, seed=0), "n_classes must be an integer >= 1"),
])
def test_bad_sizes_raise_config_error(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
