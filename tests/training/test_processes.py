"""map_processes: results in order, the same for any number of workers, errors raised here."""

import functools
import math

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.training.processes import map_processes, resolve_workers


# Worker processes import the function they run; a function defined in a test module may not be importable
# there (pytest's import mode decides the module's name), so the tasks below are library functions.


def test_two_workers_give_the_one_worker_results_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(256, 256, generator=g)
    items = [torch.randn(256, 64, generator=g) for _ in range(4)]
    seen = []
    one = map_processes(functools.partial(torch.matmul, A), items, workers=1, on_done=lambda k, n: seen.append((k, n)))
    two = map_processes(functools.partial(torch.matmul, A), items, workers=2)
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for a, b, x in zip(one, two, items):
        assert torch.equal(a, b)
        assert float((a.double() - A.double() @ x.double()).abs().max()) < 1e-3  # the product, in its place


def test_a_partial_of_a_module_function_runs_in_workers():
    assert map_processes(functools.partial(pow, 2), [1, 2, 3], workers=2) == [2, 4, 8]


def test_an_error_in_a_worker_is_raised_here():
    with pytest.raises(ValueError, match="math domain error"):
        map_processes(math.sqrt, [4.0, 9.0, -1.0, 16.0], workers=2)


@pytest.mark.parametrize("workers, tasks, expected", [(0, 1, 1), (1, 8, 1), (3, 2, 2), (2, 8, 2)])
def test_resolve_workers(workers, tasks, expected):
    assert resolve_workers(workers, tasks) == expected


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_bad_worker_counts_are_refused(bad):
    with pytest.raises(ConfigError, match="workers must be an integer >= 0"):
        resolve_workers(bad, 4)
