"""Torch's intra-op thread count for a block of work, restored afterwards (:func:`num_threads`), and
how worker processes start (:func:`process_context`)."""

from __future__ import annotations

import multiprocessing
from contextlib import contextmanager
from multiprocessing.context import BaseContext
from typing import Iterator, Sequence

import torch

from attnlab.errors import ConfigError


@contextmanager
def num_threads(threads: int | None) -> Iterator[int]:
    """Run with ``torch.set_num_threads(threads)`` (None: leave as is); yield the count in use."""
    before = torch.get_num_threads()
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ConfigError(f"threads must be an integer >= 1, got {threads!r}")
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def process_context(preload: Sequence[str] = ()) -> BaseContext:
    """The start method for worker processes: 'forkserver' where the platform has it (importing the
    modules of ``preload`` once in the server, so the second and later workers start in milliseconds),
    else 'spawn'. Both start workers from a process that has run no torch op; plain fork is unsafe once
    torch's thread pools exist."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        if preload:
            ctx.set_forkserver_preload(list(preload))
        return ctx
    return multiprocessing.get_context("spawn")
