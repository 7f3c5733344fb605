"""Tables that stay readable at any terminal width, piped output included (80 columns).

Every table the CLI prints is columns of three kinds:

    key      an id a user copies back into a command (a claim id, a variant): never wrapped, never cut
    number   never wrapped, never cut, right-aligned
    text     folds onto as many lines as it needs, never narrower than TEXT_MIN (or its own minimum)

Each column has a minimum width: its widest cell for keys and numbers, min(widest cell, TEXT_MIN)
for text, and at least its longest header word. A rich table of c columns takes the sum of its
column widths plus 3c + 1 characters (padding and borders). When the whole table fits the console
it prints as one; otherwise the columns after the key columns are dealt, in order, into groups
that fit beside the key columns, and each group prints as its own table with the keys repeated
(titled "(continued)"), so that no id wraps and no number is cut. A table whose rows are mostly
prose (``stack=True``: claims with their statements) prints instead one block per row when it does
not fit, every line after a block's first indented under it, so that only a new row starts at
column 0::

    invertibility.minimal-heads  differs  measured 3
      required == 6                                      pairs that did not fit on the first line
      statement: the fewest heads giving rank N^L is     a text field: its name once, folded at
        P = ceil(N^L / d): rank A <= Pd makes it ...     words, its further lines one step deeper
        finding: errata invertibility.cap-below-...      a cell's next line (a note) under it
      parameters:                                        an ``items`` column: its name alone,
        N=2: number of tokens N                          one item (a line of the cell) per line
        P=-: number of single-head modules P (default:
          the fewest the proved rank cap allows)

The keys and numbers print as ``name value`` pairs that break only between pairs. No line ends in
spaces.
"""

from __future__ import annotations

import textwrap

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

TEXT_MIN = 16
STACK_TEXT_MIN = 32  # a prose table (stack=True) stacks rather than squeeze its text below this
STEP = 2  # a stacked block's indentation step (module docstring)
KINDS = ("key", "number", "text")


@dataclass(frozen=True)
class Col:
    """A column: ``name`` (its header), ``kind`` (module docstring), ``min_width`` (a floor for a text
    column, e.g. the longest id inside a cell that also holds prose), ``items`` (a text column whose cells
    list one item a line, e.g. parameters: stacked, its name stands alone above the items)."""

    name: str
    kind: str = "text"
    min_width: int = 0
    items: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column kind must be one of {', '.join(KINDS)}, got {self.kind!r}")


def fmt(x) -> str:
    """A cell of a table: "-" for None, three significant digits for a float, str otherwise."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def cell_width(cell: str) -> int:
    """The printed width of a cell's widest line (rich markup removed)."""
    return max((Text.from_markup(line, emoji=False).cell_len for line in str(cell).split("\n")), default=0)


def _header_word(name: str) -> int:
    return max((len(w) for w in name.split()), default=0)


def min_width(col: Col, cells: Sequence[str]) -> int:
    """The narrowest this column may print (module docstring)."""
    natural = max((cell_width(c) for c in cells), default=0)
    if col.kind == "text":
        natural = max(min(natural, TEXT_MIN), col.min_width)
    return max(natural, _header_word(col.name), 1)


def table_width(widths: Sequence[int]) -> int:
    """Characters a rich table with these column widths takes (padding 1 each side, borders)."""
    return sum(widths) + 3 * len(widths) + 1


def layout(columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int, keys: int = 1) -> list[list[int]]:
    """Column indices of each table to print: [[0..c-1]] when everything fits in ``width``, else groups of
    the non-key columns, each with the first ``keys`` columns in front."""
    mins = [min_width(c, [r[i] for r in rows]) for i, c in enumerate(columns)]
    if table_width(mins) <= width or len(columns) <= keys + 1:
        return [list(range(len(columns)))]
    head = list(range(keys))
    groups: list[list[int]] = []
    current: list[int] = []
    for i in range(keys, len(columns)):
        if current and table_width([mins[j] for j in head + current + [i]]) > width:
            groups.append(head + current)
            current = []
        current.append(i)
    groups.append(head + current)
    return groups


def widths(columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Every column's printed width in a table of at most ``width`` characters: keys and numbers at their
    minimum (their widest cell), text columns from their minimum up to their widest cell, sharing the
    room that is left in proportion to what each still lacks."""
    mins = [min_width(c, [r[i] for r in rows]) for i, c in enumerate(columns)]
    natural = [max([m, *(cell_width(r[i]) for r in rows)]) for i, m in enumerate(mins)]
    out = list(mins)
    room = width - table_width(mins)
    want = [natural[i] - mins[i] if c.kind == "text" else 0 for i, c in enumerate(columns)]
    total = sum(want)
    if room > 0 and total > 0:
        if room >= total:
            out = [m + w for m, w in zip(mins, want)]
        else:
            share = [w * room // total for w in want]
            out = [m + x for m, x in zip(mins, share)]
    return out


def print_hanging(console, text: Text, first: int, rest: int) -> None:
    """``text`` folded at word boundaries to the console's width, its first line indented by ``first``
    and every further line by ``rest`` (>= ``first``: a hanging indent); no line ends in spaces."""
    head = text.wrap(console, max(console.width - first, TEXT_MIN))[0]  # the first line, at its own width
    start = len(head.plain)
    start += len(text.plain[start:]) - len(text.plain[start:].lstrip())  # the break's spaces end no line
    lines = [head, *(text[start:].wrap(console, max(console.width - rest, TEXT_MIN)) if start < len(text) else [])]
    for k, line in enumerate(lines):
        line.rstrip()
        console.print(Text(" " * (first if k == 0 else rest)) + line, highlight=False, soft_wrap=True)


def print_stacked(console, title: str, columns: Sequence[Col], rows: Sequence[Sequence[str]]) -> None:
    """One block per row (module docstring): keys and numbers as pairs on the first lines, text fields below,
    every line after a block's first indented under it."""
    from rich.markup import escape

    print_hanging(console, Text(title, style="bold"), 0, STEP)
    width = console.width
    for r in rows:
        console.print("", highlight=False)
        lines: list[list[str]] = [[]]
        length = 0
        for c, cell in zip(columns, r):
            if c.kind == "text" or not cell:
                continue
            pair = cell if c.kind == "key" else f"[dim]{escape(c.name)}[/] {cell}"
            size = cell_width(pair)
            if lines[-1] and length + 2 + size > width:  # the next line, indented under the first
                lines.append([])
                length = STEP
            length += size + (2 if lines[-1] else 0)
            lines[-1].append(pair)
        for k, line in enumerate(lines):
            if line:
                console.print(" " * (STEP if k else 0) + "  ".join(line), highlight=False, soft_wrap=True)
        for c, cell in zip(columns, r):
            if c.kind != "text" or not cell or cell == "-":
                continue
            label = f"[dim]{escape(c.name)}:[/]"
            parts = str(cell).split("\n")
            if c.items:  # the name alone, then one item a line under it
                console.print(" " * STEP + label, highlight=False, soft_wrap=True)
                for part in parts:
                    print_hanging(console, Text.from_markup(part, emoji=False), 2 * STEP, 3 * STEP)
            else:  # the name before the first line; the cell's further lines (notes) one step deeper
                for k, part in enumerate(parts):
                    text = Text.from_markup((label + " " if k == 0 else "") + part, emoji=False)
                    print_hanging(console, text, STEP * (k > 0) + STEP, STEP * (k > 0) + 2 * STEP)
    console.print("", highlight=False)


def print_table(console, title: str, columns: Sequence[Col], rows: Sequence[Sequence[str]], *, keys: int = 1,
                stack: bool = False, **table_kwargs) -> None:
    """Print ``rows`` (cells as rich markup strings, escaped by the caller; the title and the column names
    print as plain text) under ``columns``, split into as
    many tables as the console's width needs (module docstring); every column gets an explicit width
    (:func:`widths`), so nothing a key or number column holds is ever cut."""
    rows = [list(r) for r in rows]
    if stack:  # a prose table stacks rather than squeeze a text column below STACK_TEXT_MIN (or its widest cell)
        roomy = [max(min_width(c, [r[i] for r in rows]),
                     min(STACK_TEXT_MIN, max((cell_width(r[i]) for r in rows), default=0)) if c.kind == "text" else 0)
                 for i, c in enumerate(columns)]
        if table_width(roomy) > console.width:
            print_stacked(console, title, columns, rows)
            return
    for g, idx in enumerate(layout(columns, rows, console.width, keys)):
        cols = [columns[i] for i in idx]
        sub = [[r[i] for i in idx] for r in rows]
        t = Table(title=Text(title if g == 0 else f"{title} (continued)", style="table.title"), **table_kwargs)
        for c, w in zip(cols, widths(cols, sub, console.width)):
            # a key or number column never wraps its cells; its header breaks between words instead
            header = c.name if c.kind == "text" else "\n".join(textwrap.wrap(c.name, w)) or c.name
            t.add_column(Text(header, style="table.header"), no_wrap=c.kind != "text", overflow="fold", width=w,
                         justify="right" if c.kind == "number" else "left")
        for r in sub:
            t.add_row(*r)
        console.print(t)
