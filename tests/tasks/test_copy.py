"""Positional copy task: shapes, targets, seeded determinism, bad input."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.tasks import copy_batch


def _batch(seed: int, B: int = 211, n: int = 7, V: int = 5):
    return copy_batch(B, n, V, generator=torch.Generator().manual_seed(seed))


def test_shapes_dtypes_and_ranges():
    b = _batch(0)  # distinct primes B=211, n=7, V=5: an axis mix-up fails
    assert b.tokens.shape == (211, 7) and b.positions.shape == (211,) and b.targets.shape == (211,)
    assert b.tokens.dtype == b.positions.dtype == b.targets.dtype == torch.int64
    assert int(b.tokens.min()) >= 0 and int(b.tokens.max()) <= 4
    assert int(b.positions.min()) >= 0 and int(b.positions.max()) <= 6
    # 211 draws over 7 positions and 1477 over 5 tokens: every value occurs (P(miss) < 1e-12)
    assert set(b.positions.tolist()) == set(range(7)) and set(b.tokens.flatten().tolist()) == set(range(5))


def test_target_is_the_token_at_the_queried_position():
    b = _batch(1)
    for i in range(b.tokens.shape[0]):
        assert b.targets[i].item() == b.tokens[i, b.positions[i]].item()


def test_same_seed_same_batch_other_seed_other_batch():
    a, b, c = _batch(3), _batch(3), _batch(4)
    for x, y in ((a.tokens, b.tokens), (a.positions, b.positions), (a.targets, b.targets)):
        assert torch.equal(x, y)
    assert not torch.equal(a.tokens, c.tokens)


def test_consecutive_draws_differ():
    g = torch.Generator().manual_seed(0)
    first, second = copy_batch(64, 8, 16, generator=g), copy_batch(64, 8, 16, generator=g)
    assert not torch.equal(first.tokens, second.tokens)


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch_size=0, n=3, V=5), "batch_size must be an integer >= 1, got 0"),
    (dict(batch_size=4, n=0, V=5), "n must be an integer >= 1, got 0"),
    (dict(batch_size=4, n=3, V=1), "V must be an integer >= 2, got 1"),
    (dict(batch_size=4.0, n=3, V=5), "batch_size must be an integer"),
])
def test_bad_sizes(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        copy_batch(**kwargs, generator=torch.Generator())
