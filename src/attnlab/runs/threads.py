"""Torch's intra-op thread count for a block of work, restored afterwards: :func:`num_threads`."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

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
