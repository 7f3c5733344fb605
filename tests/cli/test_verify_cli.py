"""`attnlab verify` and `attnlab list` as a user runs them."""

import json
import os
import re
import subprocess
import sys

import pytest


def run(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    """The CLI as a user runs it: without the tests' plugin paper."""
    env = {k: v for k, v in os.environ.items() if k != "ATTNLAB_PLUGINS"} | {"COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "attnlab.cli", *args], capture_output=True, text=True, timeout=300, env=env
    )


VERDICTS = {"reproduced", "differs", "inconclusive", "sanity", "info"}  # never fail or error


def test_verify_json_gives_every_claim_a_verdict_with_its_relation_threshold_and_source():
    p = run("verify", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert len(rows) >= 60
    for r in rows:
        assert r["verdict"] in VERDICTS, (r["id"], r["verdict"], r.get("error"))
        assert r["where"] and "paper_value" in r and r["role"] in ("text", "construction", "sanity", "info")
        if r["verdict"] != "info":
            assert r["relation"] in ("<=", "<", ">=", ">", "==", "±"), r["id"]
            assert isinstance(r["threshold"], (int, float, bool)) and r["criterion"], r["id"]
        if r["verdict"] == "inconclusive":
            assert r["reason"], r["id"]


def test_verify_table_names_claims_and_counts_verdicts_on_its_last_line():
    p = run("verify", "rank-collapse", "--seed", "3", columns=200)
    assert p.returncode == 0, p.stderr
    assert "rank-collapse.softmax-shift-invariance" in p.stdout
    last = p.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ claims: \d+ reproduced, \d+ differs, \d+ inconclusive, \d+ sanity, 0 fail, "
                        r"\d+ info", last), last


def test_errata_lists_sourced_records():
    p = run("errata", "--json")
    assert p.returncode == 0, p.stderr
    records = json.loads(p.stdout)
    for e in records:
        assert {"id", "where", "says", "correct", "whose", "kind", "witness", "survives", "check"} <= set(e)
    q = run("errata", "nope")
    assert q.returncode == 2 and "unknown paper 'nope'" in q.stderr


def test_list_json_has_papers_claims_experiments():
    p = run("list", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert {x["name"] for x in d["papers"]} == {
        "invertibility", "rank-collapse", "logic", "transformer-math", "memorization"
    }
    assert any(c["id"] == "transformer-math.softmax-jacobian" for c in d["claims"])
    assert isinstance(d["experiments"], list)
    constructions = {c["name"]: c for c in d["constructions"]}
    assert sorted(constructions) == ["invertibility", "logic", "memorization"]
    params = {p["name"]: p for p in constructions["memorization"]["parameters"]}
    assert params["H"] == {"name": "H", "type": "int", "default": 4, "help": "number of heads H"}
    logic = {p["name"]: p for p in constructions["logic"]["parameters"]}
    assert logic["solution"]["default"] == "3" and logic["M"]["type"] == "int"


def test_list_shows_no_test_fixture_but_a_plugin_paper_when_asked_for():
    p = run("list", columns=200)
    assert p.returncode == 0 and "selftest" not in p.stdout and "fixture" not in p.stdout
    assert "constructions" in p.stdout and "memorization" in p.stdout
    env = {**os.environ, "COLUMNS": "200"}  # with the tests' ATTNLAB_PLUGINS
    q = subprocess.run([sys.executable, "-m", "attnlab.cli", "list", "--json"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert "selftest" in {x["name"] for x in json.loads(q.stdout)["papers"]}


@pytest.mark.parametrize(
    "args, expected",
    [
        (["verify", "nope"], "unknown paper or claim 'nope'"),
        (["verify", "--seed", "x"], "--seed"),
        (["verify", "--seed", "-1"], "--seed must be an integer in [0, 4294967295], got -1"),
        (["verify", "--bogus"], "No such option"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_input_is_one_line_exit_2_no_traceback(args, expected):
    p = run(*args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("attnlab: error:") and expected in lines[0]
    assert "Traceback" not in p.stderr


def test_help_on_every_command():
    for cmd in ([], ["verify"], ["list"], ["errata"]):
        p = run(*cmd, "--help")
        assert p.returncode == 0 and "Usage" in p.stdout
