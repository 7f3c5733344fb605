"""Wall-clock timing of one call: warm-up, repeats, median and interquartile range.

A full ``gc.collect()`` runs before the first timed repeat and a young-generation
collection before each later one (a full collection costs ~70 ms with torch loaded),
with the collector disabled during each timed call, so a collection never lands
inside one; ``torch.set_num_threads`` is set to
the requested count for the measurement and restored afterwards (:func:`attnlab.runs.threads.num_threads`). On CUDA the
device is synchronised around each call. The first call (which includes any
compilation, e.g. torch.compile of FlexAttention) is timed on its own.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

from attnlab.errors import ConfigError
from attnlab.runs.threads import num_threads


@dataclass(frozen=True)
class Timing:
    """Seconds: median and quartiles q1, q3 over ``times``; first_call_s includes warm-up work."""

    median_s: float
    q1_s: float
    q3_s: float
    times: tuple[float, ...]
    first_call_s: float
    threads: int

    @property
    def iqr_s(self) -> float:
        return self.q3_s - self.q1_s


def _sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def quartiles(times: list[float]) -> tuple[float, float, float]:
    """(q1, median, q3) with linear interpolation between order statistics."""
    xs = sorted(times)
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, med, q3


def time_call(fn: Callable[[], object], *, repeats: int = 5, warmup: int = 1,
              threads: int | None = None) -> Timing:
    """Time ``fn()``: ``warmup`` calls (the first timed alone as first_call_s), then ``repeats`` timed calls."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ConfigError(f"repeats must be an integer >= 1, got {repeats!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
        raise ConfigError(f"warmup must be an integer >= 1, got {warmup!r}")
    with num_threads(threads) as used:
        first = _timed(fn, generation=0)
        for _ in range(max(warmup - 1, 0)):
            fn()
        gc.collect()
        times = [_timed(fn, generation=0 if i else 2) for i in range(repeats)]
    q1, med, q3 = quartiles(times)
    return Timing(med, q1, q3, tuple(times), first, used)


def _timed(fn: Callable[[], object], generation: int = 2) -> float:
    gc.collect(generation)
    enabled = gc.isenabled()
    gc.disable()
    try:
        _sync()
        t0 = time.perf_counter()
        out = fn()
        _sync()
        elapsed = time.perf_counter() - t0
    finally:
        if enabled:
            gc.enable()
    del out
    return elapsed
