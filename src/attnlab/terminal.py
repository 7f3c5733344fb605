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
not fit: the keys and numbers on the first line(s) as ``name value`` pairs that break only between
pairs, then each text field indented, folded at word boundaries, its name once before its first line.
"""

from __future__ import annotations

import textwrap

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

TEXT_MIN = 16
STACK_TEXT_MIN = 32  # a prose table (stack=True) stacks rather than squeeze its text below this
KINDS = ("key", "number", "text")


@dataclass(frozen=True)
class Col:
    """A column: ``name`` (its header), ``kind`` (module docstring), ``min_width`` (a floor for a text
    column, e.g. the longest id inside a cell that also holds prose)."""

    name: str
    kind: str = "text"
    min_width: int = 0

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


def print_stacked(console, title: str, columns: Sequence[Col], rows: Sequence[Sequence[str]]) -> None:
    """One block per row (module docstring): keys and numbers as pairs on the first lines, text fields below."""
    from rich.markup import escape

    console.print(f"[bold]{escape(title)}[/]", highlight=False)
    width = console.width
    for r in rows:
        console.print("", highlight=False)
        line, length = [], 0
        for c, cell in zip(columns, r):
            if c.kind == "text" or not cell:
                continue
            pair = cell if c.kind == "key" else f"[dim]{escape(c.name)}[/] {cell}"
            size = cell_width(pair)
            if line and length + 2 + size > width:
                console.print("  ".join(line), highlight=False, soft_wrap=True)
                line, length = [], 0
            line.append(pair)
            length += size + (2 if len(line) > 1 else 0)
        if line:
            console.print("  ".join(line), highlight=False, soft_wrap=True)
        for c, cell in zip(columns, r):
            if c.kind == "text" and cell and cell != "-":
                from rich.padding import Padding

                # the field's name once; its further lines (notes below a statement) indented under it
                for k, part in enumerate(str(cell).split("\n")):
                    text = Text.from_markup((f"[dim]{escape(c.name)}:[/] " if k == 0 else "") + part, emoji=False)
                    console.print(Padding(text, (0, 0, 0, 2 if k == 0 else 4), expand=False), highlight=False)


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
