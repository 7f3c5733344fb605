"""A cache for the index tables operators reuse across calls (layouts, patterns, block masks).

A table depends on sizes only (or on a seed), so it is built once and kept, per device where
it is placed on one. Two rules make that safe:

* it is built outside ``torch.inference_mode()``: a tensor created in inference mode can never
  be saved for backward, so a table first built during an inference pass would make every
  later training pass that reuses it fail ("Inference tensors cannot be saved for backward");
* it is built under ``torch.no_grad()``: a table is a constant, never part of a graph.
"""

from __future__ import annotations

from functools import lru_cache, wraps
from typing import Callable, TypeVar

import torch

F = TypeVar("F", bound=Callable)


def table_cache(maxsize: int = 32) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)`` whose entries are built as normal, grad-free tensors
    even when the first call happens in inference mode (module docstring)."""

    def decorate(fn: F) -> F:
        @lru_cache(maxsize=maxsize)
        @wraps(fn)
        def cached(*args, **kwargs):
            return outside_inference(fn, *args, **kwargs)

        return cached  # type: ignore[return-value]

    return decorate


def outside_inference(fn: Callable, *args, **kwargs):
    """fn(*args, **kwargs) with inference mode and autograd off."""
    with torch.inference_mode(False), torch.no_grad():
        return fn(*args, **kwargs)
