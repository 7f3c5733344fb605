"""Progress inside one long experiment, with an ETA: :class:`Steps`, :func:`note` and :func:`progress_sink`.

An experiment that trains for minutes or hours counts its units of work (models trained, epochs)
with ``Steps(what, total)`` and ``advance()``; each advance sends one line,

    "12/42 models trained, ETA 0:31:05"

(ETA = elapsed / done x (total - done), from the units done so far) to the sink installed by
whoever runs the experiment: ``attnlab reproduce`` shows it in its progress bar on a terminal and as
a plain line on stderr off one (``ATTNLAB_PROGRESS=0`` silences both). Without a sink (a script, a
test) nothing is printed. Work whose units are not known in advance (the rounds of a search, which
stops once its bracket is narrow) says what it did with ``note(line)`` instead.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

_SINK: ContextVar[Callable[[str], None] | None] = ContextVar("attnlab_progress_sink", default=None)


@contextmanager
def progress_sink(sink: Callable[[str], None] | None) -> Iterator[None]:
    """Send every :class:`Steps` line made inside the block to ``sink`` (None: nowhere)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def hms(seconds: float) -> str:
    """Seconds as h:mm:ss."""
    s = int(round(max(seconds, 0.0)))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Steps:
    """``total`` units of work named ``what`` ("models trained"), counted by :meth:`advance`."""

    def __init__(self, what: str, total: int, clock: Callable[[], float] = time.perf_counter):
        self.what, self.total, self.done = what, int(total), 0
        self._clock = clock
        self._start = clock()

    def line(self) -> str:
        """"done/total what, ETA h:mm:ss" (no ETA before the first unit or after the last)."""
        elapsed = self._clock() - self._start
        eta = (f", ETA {hms(elapsed / self.done * (self.total - self.done))}"
               if 0 < self.done < self.total else "")
        return f"{self.done}/{self.total} {self.what}{eta}"

    def advance(self, done: int | None = None) -> None:
        """Count one more unit (or set the count to ``done``) and send the line to the sink."""
        self.done = self.done + 1 if done is None else int(done)
        sink = _SINK.get()
        if sink is not None:
            sink(self.line())


def note(line: str) -> None:
    """Send one line of progress to the sink (nothing without one): for work whose remaining units
    are not known in advance, e.g. "H = 8: T = 1240 memorized after 8210 steps"."""
    sink = _SINK.get()
    if sink is not None:
        sink(line)
