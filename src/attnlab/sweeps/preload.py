"""Imported once by the process pool's fork server: torch, the worker and every registered
experiment, so that each worker forked from it starts in milliseconds."""

from attnlab.registry import discover
from attnlab.sweeps import worker  # noqa: F401

discover()
