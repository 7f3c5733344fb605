"""Peak memory of one call on CPU: the resident-set high-water mark, reset just before it.

    peak = VmHWM after fn() - VmRSS before fn()

Linux keeps the resident-set high-water mark VmHWM in /proc/self/status and
resets it to the current resident set when "5" is written to
/proc/self/clear_refs. Before the call, ``malloc_trim(0)`` hands freed heap pages
back to the kernel, so memory freed by an earlier measurement and kept by the
allocator cannot be reused silently (which would hide it from the peak). This
sees every allocation that is touched (torch's, oneDNN's, a compiled kernel's
buffers), unlike tracemalloc, which sees only Python objects; pages allocated
and never written (``torch.empty`` alone) are not resident and are not counted.
It measures the process, so another thread allocating at the same time would
be counted too: measure one thing at a time. It is what the process holds, so it
includes the allocator's choices: a block freed during the call may stay resident
(glibc serves blocks below its dynamic mmap threshold, up to 32 MiB, from the heap)
and then counts until reused, so a peak can exceed the largest set of live tensors
by up to the size of freed blocks (tests/bench/test_harness.py bounds it).

On CUDA, ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``
is used instead. Elsewhere (no /proc) the peak is reported as unavailable (None).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from dataclasses import dataclass
from typing import Callable

import torch

_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"


@dataclass(frozen=True)
class PeakMemory:
    """bytes: the peak above what was resident before the call; method: how it was measured."""

    bytes: int | None
    method: str

    @property
    def mb(self) -> float | None:
        return None if self.bytes is None else self.bytes / 2**20


def _status_bytes(key: str) -> int:
    with open(_STATUS) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    raise OSError(f"{key} missing from {_STATUS}")


def _malloc_trim() -> None:
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass


def rss_peak_available() -> bool:
    """True where the high-water mark can be reset (Linux >= 4.0)."""
    try:
        _status_bytes("VmHWM")
        with open(_CLEAR_REFS, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_memory(fn: Callable[[], object], *, device: str = "cpu") -> PeakMemory:
    """Peak memory of one ``fn()`` above the memory in use before it (see the module docstring)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = fn()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - before
        del out
        return PeakMemory(int(peak), "torch.cuda.max_memory_allocated")
    if not rss_peak_available():
        return PeakMemory(None, "unavailable (needs Linux /proc/self/clear_refs)")
    gc.collect()
    _malloc_trim()
    with open(_CLEAR_REFS, "w") as f:
        f.write("5")
    before = _status_bytes("VmRSS")
    out = fn()
    peak = _status_bytes("VmHWM") - before
    del out
    return PeakMemory(max(int(peak), 0), "resident-set high-water mark (VmHWM)")
