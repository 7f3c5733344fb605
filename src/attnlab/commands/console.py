"""What the commands print on a terminal and off one: the two consoles, the progress display
(:func:`progress_bar`: a bar on a terminal, one plain line per step off one), JSON on stdout, the
colour of each verdict, and the estimate said before long work."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from dataclasses import dataclass
from typing import Any, Iterable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from attnlab import estimates
from attnlab.estimates import Estimate
from attnlab.runs.progress import hms

# spaces (and tabs) at the end of a line, before the style codes that may close it
_TRAILING_SPACE = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)(?=\n)")


def strip_trailing_spaces(text: str) -> str:
    """``text`` with no line ending in spaces; a style code that closes a line (``ESC[0m``) stays.

    >>> strip_trailing_spaces("a  \\nb\\x1b[1m c \\x1b[0m\\n")
    'a\\nb\\x1b[1m c\\x1b[0m\\n'
    """
    return _TRAILING_SPACE.sub(r"\1", text)


class TrimmedConsole(Console):
    """A rich console whose lines never end in spaces: rich pads a table's centred title, a padded
    block and a wrapped paragraph to the full width, which a pipe, a log file or a copy-paste keeps.
    The text rich renders for each print is trimmed line by line before it is written (on a
    terminal too, where the padding shows nothing)."""

    def _render_buffer(self, buffer: Iterable[Any]) -> str:
        return strip_trailing_spaces(super()._render_buffer(buffer))


def make_console(**kwargs: Any) -> Console:
    """A console for the commands: emoji codes off, so that a user's ``2:x:4`` prints as typed (rich's
    default turns ``:x:`` into an emoji even with markup off); markup stays on for the verdict colours,
    so every user value in a markup string goes through :func:`rich.markup.escape`, and plain lines
    go through :func:`say`; no line ends in spaces (:class:`TrimmedConsole`)."""
    return TrimmedConsole(emoji=False, **kwargs)


console = make_console()
err_console = make_console(stderr=True)

PROGRESS_ENV = "ATTNLAB_PROGRESS"  # "0": no progress lines off a terminal, no announced estimates


@dataclass
class _Task:
    """One task of a :class:`PlainProgress`: what it is doing, how many steps it has done, of how many."""

    description: str
    total: float | None = None
    completed: float = 0


class PlainProgress:
    """Progress off a terminal (a log file, CI, ``nohup``): one plain line on stderr per step,
    ``[attnlab 0:01:02] what (done/total, ETA 0:03:00)``, where a terminal shows a bar.

    It takes the calls the commands make of :class:`rich.progress.Progress` (``add_task``,
    ``update``, ``track``) and prints a line when the step or the count changes.
    """

    def __init__(self) -> None:
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self._tasks: dict[int, _Task] = {}
        self._last: tuple | None = None

    def __enter__(self) -> "PlainProgress":
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def add_task(self, description: str, total: float | None = None, **_) -> int:
        self._tasks[len(self._tasks)] = _Task(description, total)
        return len(self._tasks) - 1

    def update(self, task: int, *, description: str | None = None, completed: float | None = None,
               total: float | None = None, **_) -> None:
        t = self._tasks[task]
        if description is not None:
            t.description = description
        if completed is not None:
            t.completed = completed
        if total is not None:
            t.total = total
        self._line(t)

    def track(self, sequence, description: str = ""):
        items = list(sequence)
        task = self.add_task(description, total=len(items))
        for i, item in enumerate(items):
            self.update(task, completed=i)
            yield item
        self.update(task, completed=len(items))

    def _line(self, t: _Task) -> None:
        done, total = int(t.completed or 0), t.total
        key = (t.description, done, total)
        if key == self._last:
            return
        self._last = key
        elapsed = self._clock() - self._start
        count = f"{done}/{int(total)}" if total else f"{done}"
        eta = f", ETA {hms(elapsed / done * (total - done))}" if total and 0 < done < total else ""
        sys.stderr.write(f"[attnlab {hms(elapsed)}] {t.description} ({count}{eta})\n")
        sys.stderr.flush()


def progress_bar(disable: bool = False) -> "Progress | PlainProgress":
    """A transient progress bar on stderr (runs done/total, elapsed, ETA); off a terminal, one
    plain line per step (:class:`PlainProgress`), unless ``ATTNLAB_PROGRESS=0`` (then nothing: a bar
    off a terminal would still end with an empty line)."""
    if not err_console.is_terminal:
        if not disable and os.environ.get(PROGRESS_ENV, "1") != "0":
            return PlainProgress()
        disable = True
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=disable,
    )


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


VERDICT_STYLE = {"reproduced": "green", "differs": "magenta", "inconclusive": "yellow", "holds": "blue",
                 "refuted": "magenta", "sanity": "cyan", "fail": "bold red", "info": "dim", "error": "bold red"}


def say(console: Console, text: str) -> None:
    """One plain line (paths, counts, user values): no markup, no emoji, no highlighting, never wrapped
    by rich (the terminal folds it), so that what the user typed prints as typed."""
    console.print(text, highlight=False, markup=False, emoji=False, soft_wrap=True)


def print_folded(console: Console, text: str, *, indent: int = 2, separator: str = " ") -> None:
    """``text`` (no markup) folded to the console's width: lines break at ``separator`` (words by
    default; " · " keeps the parts of a count whole), continuation lines indented by ``indent``."""
    width = max(24, console.width)
    parts, lines, line = text.split(separator), [], ""
    for part in parts:
        joined = part if not line else line + separator + part
        if len(joined) <= width or not line:
            line = joined
        else:
            lines.append(line)
            line = " " * indent + part
    lines.append(line)
    for one in lines:
        for piece in textwrap.wrap(one, width=width, subsequent_indent=" " * indent, break_long_words=False,
                                   break_on_hyphens=False) or [""]:
            say(console, piece)


def verdict_markup(v: str) -> str:
    """A verdict in its colour (rich markup)."""
    return f"[{VERDICT_STYLE.get(v, 'default')}]{v}[/]"


def announce_estimate(estimate: Estimate) -> None:
    """Say the estimate on stderr before work estimated to take longer than estimates.ANNOUNCE_SECONDS
    (read at the call; not with ATTNLAB_PROGRESS=0, which keeps stderr to errors)."""
    if estimate.seconds > estimates.ANNOUNCE_SECONDS and os.environ.get(PROGRESS_ENV, "1") != "0":
        say(err_console, f"estimated: {estimate.describe()}")
