"""map_processes: results in order, the same for any number of workers, errors raised here."""

import functools

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.training.processes import map_processes, resolve_workers


def _fit(seed: int) -> torch.Tensor:
    """A small least-squares fit by Adam: float32 work whose bits depend on the thread count."""
    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(256, 32, generator=g), torch.randn(256, generator=g)
    w = torch.zeros(32, requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.05)
    for _ in range(30):
        opt.zero_grad()
        ((X @ w - y) ** 2).mean().backward()
        opt.step()
    return w.detach()


def _fail(x: int) -> int:
    if x == 2:
        raise RuntimeError("item 2 failed")
    return x


def test_two_workers_give_the_one_worker_results_bit_for_bit():
    seen = []
    one = map_processes(_fit, range(4), workers=1, on_done=lambda k, n: seen.append((k, n)))
    two = map_processes(_fit, range(4), workers=2)
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for a, b in zip(one, two):
        assert torch.equal(a, b)
    assert not torch.equal(one[0], one[1])  # the order is kept, not a constant result


def test_a_partial_of_a_module_function_runs_in_workers():
    assert map_processes(functools.partial(pow, 2), [1, 2, 3], workers=2) == [2, 4, 8]


def test_an_error_in_a_worker_is_raised_here():
    with pytest.raises(RuntimeError, match="item 2 failed"):
        map_processes(_fail, range(4), workers=2)


@pytest.mark.parametrize("workers, tasks, expected", [(0, 1, 1), (1, 8, 1), (3, 2, 2), (2, 8, 2)])
def test_resolve_workers(workers, tasks, expected):
    assert resolve_workers(workers, tasks) == expected


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_bad_worker_counts_are_refused(bad):
    with pytest.raises(ConfigError, match="workers must be an integer >= 0"):
        resolve_workers(bad, 4)
