"""Types in plain words: every command's --help names what each value is ("integer", "folder", "key=value")
and shows no type for a flag, never Python's annotation (``<bool>``, ``list[str]``, ``int | None``); a list in
``--set`` is written with commas (or ";"), and a value that does not fit is one line saying what it must be
(attnlab.commands.plain_help, attnlab.config.plain_type)."""

from __future__ import annotations

import re

import pytest

from attnlab.cli import app

PYTHON_TYPES = re.compile(r"<(?:bool|int|float|str|text|path|list|tuple)\b|list\[|tuple\[|\| None|\bNoneType\b")
COMMANDS = [[]] + [[c.name or c.callback.__name__] for c in app.registered_commands]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0] if a else "attnlab")
def test_help_names_types_in_words(cli, argv):
    code, out, _ = cli([*argv, "--help"])
    assert code == 0
    assert not PYTHON_TYPES.search(out), PYTHON_TYPES.findall(out)
    assert not re.search(r"--help +\S+ +Show this", out)  # a flag shows no type
    assert "Show this message and exit." in out


def test_help_shows_the_word_of_each_value(cli):
    rows = {}
    for argv in (["verify"], ["sweep"], ["report"]):
        _, out, _ = cli([*argv, "--help"])
        for line in out.splitlines():
            m = re.match(r"^│ +(?:\* +)?(\S+)(?: +--no-\S+)? +(\S+(?: or \S+)?)  ", line)
            if m:
                rows[(argv[0], m.group(1))] = m.group(2)
    assert rows[("verify", "papers")] == "name or id"  # the argument keeps its name; its type is in words
    assert rows[("verify", "--seed")] == "integer"
    assert rows[("sweep", "--set")] == "key=value" and rows[("sweep", "--grid")] == "key=v1,v2,..."
    assert rows[("sweep", "--out")] == "folder" and rows[("report", "run_dir")] == "folder"


def test_a_list_set_with_commas_or_semicolons_gives_the_same_config():
    from attnlab.commands.reproduce import make_config
    from attnlab.registry import get_experiment

    exp = get_experiment("memorization.regression")  # H_grid: tuple[int, ...] | None
    configs = [make_config(exp, scale="quick", seed=0, device="cpu", settings={"H_grid": text})
               for text in ("1,2", "1;2", " 2 , 1 ")]
    assert [c.H_grid for c in configs] == [(1, 2)] * 3


def test_set_with_commas_runs_from_the_command_line(cli):
    code, out, err = cli(["reproduce", "memorization", "--only", "regression", "--set", "H_grid=1,2", "--dry-run"])
    assert code == 0, err
    assert "memorization.regression" in out


@pytest.mark.parametrize("value, says", [
    ("1,x", "--set H_grid=1,x: expected integers separated by commas (e.g. 3,11,64) or none for H_grid"),
    ("x", "--set H_grid=x: expected integers separated by commas (e.g. 3,11,64) or none for H_grid"),
])
def test_a_list_that_does_not_fit_is_one_line_in_words(cli_error, tmp_path, value, says):
    out = tmp_path / "run"
    line = cli_error(["reproduce", "memorization", "--only", "regression", "--set", f"H_grid={value}",
                      "--out", str(out)])
    assert line == f"attnlab: error: {says}"
    assert not PYTHON_TYPES.search(line)
    assert not out.exists()  # nothing written


def test_a_number_that_does_not_fit_says_so_in_words(cli_error):
    line = cli_error(["reproduce", "transformer-math", "--only", "head-structure", "--set", "search_draws=x",
                      "--dry-run"])
    assert line == "attnlab: error: --set search_draws=x: expected an integer or none for search_draws"
