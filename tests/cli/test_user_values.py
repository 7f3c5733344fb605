"""What a user typed prints as typed: rich markup (``[``, ``[/]``) and emoji codes (``:x:``) in a
value, a path or a name are never interpreted, in error lines and in tables alike."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from attnlab.commands.console import err_console, make_console, say
from attnlab.terminal import Col, print_table
from helpers import run_cli

TRICKY = "2:x:[/]4[red]"  # an emoji code, a closing tag and an opening tag


@pytest.mark.parametrize("argv, echoed", [
    (["construct", "logic", "--set", f"N={TRICKY}"], f"--set N={TRICKY}: expected"),
    (["verify", f"p{TRICKY}"], f"unknown paper or claim 'p{TRICKY}'"),
    (["report", f"/no/such/{TRICKY}"], f"run directory /no/such/{TRICKY} does not exist"),
    (["sweep", f"x.{TRICKY}"], f"unknown experiment 'x.{TRICKY}'"),
])
def test_a_bad_value_is_echoed_literally(cli_error, argv, echoed):
    line = cli_error(argv)
    assert echoed in line
    assert "\u274c" not in line  # the emoji :x: becomes


def test_a_construction_prints_its_out_path_literally(tmp_path):
    folder = tmp_path / "a:x:["
    folder.mkdir()
    out = folder / "]b[red]:x:.npz"
    proc = run_cli(["construct", "memorization", "--set", "H=2", "--out", str(out)], columns=len(str(out)) + 40)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file()
    assert f"│ out            │ {out} │" in proc.stdout  # the table's out row, as typed
    assert "\u274c" not in proc.stdout


def test_say_and_table_titles_print_text_as_is():
    buf = io.StringIO()
    plain = make_console(file=buf, width=200, color_system=None)
    say(plain, f"path {TRICKY}")
    print_table(plain, f"title {TRICKY}", [Col("key", "key"), Col("value")], [["k", "v" * 40]])
    text = buf.getvalue()
    assert f"path {TRICKY}\n" in text
    assert f"title {TRICKY}" in text
    assert err_console._emoji is False


def test_rich_would_turn_the_code_into_an_emoji_by_default():
    """The failure the consoles guard against (so the tests above can fail)."""
    buf = io.StringIO()
    Console(file=buf, color_system=None).print("2:x:4", markup=False, highlight=False)
    assert buf.getvalue() == "2\u274c4\n"
