"""The stacked tables (`verify`, `list`, `coverage`) at 80 columns: only a new entry starts at column 0, every
further line of an entry is indented under it, no line ends in spaces, and a list of parameters carries its
label once (attnlab.terminal.print_stacked, attnlab.commands.console.TrimmedConsole)."""

from __future__ import annotations

import io
import re

import pytest

from attnlab.commands.console import make_console, strip_trailing_spaces
from attnlab.terminal import Col, print_table
from helpers import run_cli

WIDTH = 80


def _entries(out: str, ids: list[str]) -> list[str]:
    """The lines of ``out`` at column 0 that are not an entry's first line (an id, alone or followed by two
    spaces), a blank line or one of the ``ids``' titles."""
    first = re.compile(r"^(?:%s)(?:  |$)" % "|".join(map(re.escape, ids)))
    return [line for line in out.splitlines() if line and not line.startswith(" ") and not first.match(line)]


def test_a_stacked_row_indents_every_line_after_its_first():
    console = make_console(file=io.StringIO(), width=WIDTH, color_system=None)
    rows = [["transformer-math.head-projection-unique-box", "reproduced", "1.42e-14", "<= 1e-12",
             "the solution of eq. (21) is unique when E~ is read as a box " * 3 + "\nanchor: a note " * 2, "unique"]]
    print_table(console, "attnlab verify (seed 0): attnlab's own statements (beyond the texts; never counted as "
                         "reproductions)",
                [Col("claim", "key"), Col("verdict", "key"), Col("measured", "number"), Col("required", "number"),
                 Col("statement"), Col("paper")], rows, stack=True)
    out = console.file.getvalue()
    lines = out.splitlines()
    assert lines[:2] == ["attnlab verify (seed 0): attnlab's own statements (beyond the texts; never",
                         "  counted as reproductions)"]  # the title's second line indented too
    assert lines[3] == "transformer-math.head-projection-unique-box  reproduced  measured 1.42e-14"
    assert lines[4] == "  required <= 1e-12"  # the pair that did not fit, under its entry
    assert lines[5].startswith("  statement: the solution") and lines[6].startswith("    ")  # a hanging indent
    assert "    anchor: a note" in lines and "  paper: unique" in lines
    assert all(line.startswith(" ") for line in lines[4:] if line)
    assert all(len(line) <= WIDTH and line == line.rstrip() for line in lines)


def test_a_list_of_items_carries_its_label_once():
    console = make_console(file=io.StringIO(), width=WIDTH, color_system=None)
    params = "N=2: number of tokens N\nP=-: " + "number of single-head modules P " * 4 + "\nseed=0: seed"
    print_table(console, "constructions", [Col("name", "key"), Col("description"), Col("parameters", items=True)],
                [["invertibility", "Theorem 1 " * 10, params]], stack=True)
    lines = console.file.getvalue().splitlines()
    at = lines.index("  parameters:")
    assert lines[at + 1] == "    N=2: number of tokens N"
    assert lines[at + 2].startswith("    P=-: number of single-head") and lines[at + 3].startswith("      of single")
    assert lines[-2] == "    seed=0: seed"
    assert sum("parameters" in line for line in lines) == 1


def test_list_at_80_columns_prints_each_parameter_label_once_and_no_trailing_space():
    from attnlab.registry import all_constructions

    proc = run_cli(["list"], columns=WIDTH)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line.endswith(" ")] == []
    assert lines.count("  parameters:") == len(all_constructions())  # once per construction, alone on its line
    assert "    N=2: number of tokens N" in lines and not any("parameters: " in line for line in lines)


@pytest.mark.slow  # runs memorization's claims (a few seconds) unless the session's claim cache has them
def test_verify_at_80_columns_indents_continuations_and_ends_no_line_in_a_space():
    from attnlab.registry import select_claims

    proc = run_cli(["verify", "memorization"], columns=WIDTH)
    assert proc.returncode in (0, 1), proc.stderr
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line.endswith(" ")] == []
    assert max(map(len, lines)) <= WIDTH
    ids = [c.id for c in select_claims(["memorization"])]
    stray = _entries(proc.stdout, ids)
    titles = [line for line in stray if line.startswith("attnlab verify (seed 0): ")]
    tally = [line for line in stray if re.match(r"^\d+ claims · ", line)]
    assert titles and len(tally) == 1 and set(stray) == set(titles + tally), stray
    assert re.search(r"^  required [<>=]=? \S+$", proc.stdout, re.M)  # a header that wrapped, indented


def test_strip_trailing_spaces_keeps_the_style_codes_that_close_a_line():
    assert strip_trailing_spaces("a  \nb \x1b[1mc  \x1b[0m\n  \n") == "a\nb \x1b[1mc\x1b[0m\n\n"
    assert strip_trailing_spaces("no newline  ") == "no newline  "  # a line still being written stays
