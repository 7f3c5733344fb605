"""Numbers an operator reports about its own numerics, read from the device only when asked.

An operator's forward pass on CUDA runs asynchronously: the host queues kernels and moves
on. Turning a device value into a Python number (``.item()``, ``int(t)``, ``bool(t)``) makes
the host wait for every queued kernel, so one such read per call stalls the queue and
breaks CUDA-graph capture and ``torch.compile(fullgraph=True)``. :class:`Diagnostics`
therefore keeps each number as a 0-d tensor computed on the device with the output, and
converts it on first access:

    out = linear_attention(q, k, v)          # no host synchronisation
    out.diagnostics["eps_hits"]              # one, here, if it is read at all

It is a read-only mapping of name -> Python number; a value that was converted once is
cached. ``dict(d)`` or :meth:`Diagnostics.to_dict` reads them all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Callable

from torch import Tensor

Number = int | float


class Diagnostics(Mapping):
    """Mapping name -> number, each held as a 0-d tensor (or a number) until read.

    values: name -> 0-d Tensor or Python number; kinds: name -> ``int`` or ``float``
    (the Python type the value is converted to; default ``float``).
    """

    def __init__(self, values: Mapping[str, Tensor | Number], kinds: Mapping[str, Callable] | None = None):
        self._raw = dict(values)
        self._kinds = dict(kinds or {})
        self._done: dict[str, Number] = {}

    def __getitem__(self, name: str) -> Number:
        if name not in self._done:
            raw = self._raw[name]  # KeyError for an unknown name, as a dict
            kind = self._kinds.get(name, float)
            self._done[name] = kind(raw.item() if isinstance(raw, Tensor) else raw)
        return self._done[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def pending(self) -> tuple[str, ...]:
        """Names not yet read from the device."""
        return tuple(n for n in self._raw if n not in self._done)

    def to_dict(self) -> dict[str, Number]:
        """Every value as a Python number (reads the device once per pending name)."""
        return {n: self[n] for n in self._raw}

    def __repr__(self) -> str:
        return f"Diagnostics({self.to_dict()!r})"
