"""What a user reads in a terminal or a log: progress lines off a terminal, and --help that flows."""

from __future__ import annotations

import re


from attnlab.commands.console import PlainProgress
from helpers import exit_status


LINE = re.compile(r"\[attnlab \d+:\d\d:\d\d\] (?P<what>.+) \((?P<done>\d+)/(?P<total>\d+)(, ETA \d+:\d\d:\d\d)?\)")


def test_verify_off_a_terminal_prints_one_line_per_claim(capsys, monkeypatch):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "1")
    assert exit_status(["verify", "rank-collapse.softmax", "rank-collapse.path-decomposition"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    found = [LINE.fullmatch(line) for line in err]
    assert all(found), err
    assert [(m["what"], m["done"], m["total"]) for m in found] == [("verifying claims", str(i), "2") for i in range(3)]
    assert "ETA" in err[1] and "ETA" not in err[-1]


def test_reproduce_off_a_terminal_names_each_experiment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "1")
    from attnlab import registry
    from attnlab.checks import info
    from attnlab.config import RunConfig
    from attnlab.registry import Experiment
    from attnlab.results import ExperimentResult
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Cfg(RunConfig):
        pass

    with registry.scratch() as state:
        registry.register_paper("toy", "Toy", "toy.md", package="tests.toy")
        for name in ("a", "b"):
            state.experiments[f"toy.{name}"] = Experiment(f"toy.{name}", name, Cfg,
                                                           lambda cfg, rd: ExperimentResult(summary=[info("x", 1)]))
        assert exit_status(["reproduce", "toy", "--out", str(tmp_path / "r")]) == 0
    steps = [LINE.fullmatch(line)["what"] for line in capsys.readouterr().err.strip().splitlines()]
    assert steps == ["toy.a", "toy.b", "claims", "report"]


def test_no_progress_lines_when_turned_off_or_for_json(capsys, monkeypatch):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "0")
    assert exit_status(["verify", "rank-collapse.softmax"]) == 0
    assert capsys.readouterr().err.strip() == ""
    monkeypatch.setenv("ATTNLAB_PROGRESS", "1")
    assert exit_status(["verify", "rank-collapse.softmax", "--json"]) == 0
    assert capsys.readouterr().err.strip() == ""


def test_plain_progress_counts_and_eta(capsys):
    p = PlainProgress()
    t = p.add_task("cells", total=4)
    p.update(t, completed=0)
    p.update(t, completed=0)  # the same step again: no second line
    p.update(t, completed=2)
    p.update(t, description="done", completed=4)
    lines = capsys.readouterr().err.strip().splitlines()
    assert [LINE.fullmatch(x)["what"] for x in lines] == ["cells", "cells", "done"]
    assert lines[1].endswith("(2/4, ETA 0:00:00)") and lines[2].endswith("(4/4)")




def test_every_commands_help_flows_as_paragraphs():
    """--help wraps the text at the terminal's width: a docstring's hard line breaks inside a
    paragraph would leave orphan words (typer keeps them)."""
    from attnlab.cli import app

    for command in app.registered_commands:
        for par in command.help.split("\n\n"):
            lines = par.splitlines()
            if not any(line.lstrip().startswith("- ") or line.startswith(" ") for line in lines):
                assert len(lines) == 1, (command.callback.__name__, par)


def test_bench_help_at_80_columns_has_no_orphan_line(capsys, monkeypatch):
    from attnlab.cli import console

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(console, "width", 80)
    assert exit_status(["bench", "--help"]) == 0
    out = capsys.readouterr().out
    text = out[:out.index("Options")]
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("Usage")]
    assert all(len(line) >= 20 for line in lines[:-1] if not line.endswith(".")), lines
