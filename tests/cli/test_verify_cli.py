"""`attnlab verify`, `attnlab list` and `attnlab errata` as a user runs them, in process (the
`cli` fixture); one test starts the interpreter as a user does, without the tests' plugin paper.

Every claim's verdict and its stored fields are checked once, in tests/test_registry.py; here
`verify` runs on a few fast claims, enough to check what the command prints."""

import json
import os
import re
import subprocess
import sys

import pytest

from attnlab.registry import all_constructions
from helpers import paper_folders, tally_of

VERDICTS = {"reproduced", "differs", "inconclusive", "holds", "refuted", "sanity", "info"}  # never fail or error
FAST = ["transformer-math.softmax-jacobian", "transformer-math.softmax-jacobian-vanishes"]


def tree_papers() -> set[str]:
    """The papers of the tree: one folder each under attnlab/papers (a sixth is one more)."""
    return set(paper_folders())


def test_verify_json_gives_each_claim_a_verdict_with_its_relation_threshold_and_source(cli):
    code, out, err = cli(["verify", *FAST, "--json"])
    assert code == 0, err
    rows = json.loads(out)
    assert [r["id"] for r in rows] == FAST
    for r in rows:
        assert r["verdict"] in VERDICTS, (r["id"], r["verdict"], r.get("error"))
        assert r["where"] and "paper_value" in r and r["role"] in ("text", "own", "construction", "sanity", "info")
        assert r["anchor"] == "" or (r["anchor"].startswith("transformer-math.") and r["falsifier"]), r["id"]
        assert r["group"] in ("text", "own", "sanity", "info") and "erratum" in r
        assert r["relation"] in ("<=", "<", ">=", ">", "==", "±"), r["id"]
        assert isinstance(r["threshold"], (int, float, bool)) and r["criterion"], r["id"]


def test_verify_table_names_claims_and_counts_verdicts_on_its_last_line(cli):
    code, out, err = cli(["verify", *FAST, "--seed", "3"])
    assert code == 0, err
    assert FAST[0] in out
    last = tally_of(out)
    assert re.fullmatch(r"2 claims · the texts: \d reproduced, \d differs( \(\d findings?\))?, \d inconclusive · "
                        r"attnlab's own statements: \d holds, \d refuted, \d inconclusive · \d sanity, 0 fail, \d info",
                        last), last


def test_errata_lists_sourced_records(cli):
    code, out, err = cli(["errata", "--json"])
    assert code == 0, err
    records = json.loads(out)
    assert records
    for e in records:
        assert {"id", "where", "says", "correct", "whose", "kind", "witness", "survives", "check"} <= set(e)
    code, _, err = cli(["errata", "nope"])
    assert code == 2 and "unknown paper 'nope'" in err


def test_list_json_has_papers_claims_experiments(cli):
    code, out, err = cli(["list", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert tree_papers() <= {x["name"] for x in d["papers"]}  # and the tests' plugin paper
    assert any(c["id"] == "transformer-math.softmax-jacobian" for c in d["claims"])
    assert isinstance(d["experiments"], list)
    constructions = {c["name"]: c for c in d["constructions"] if c["paper"] in tree_papers()}
    assert {c.name for c in all_constructions() if c.paper in tree_papers()} == set(constructions)
    assert {"invertibility", "logic", "memorization"} <= set(constructions)
    params = {p["name"]: p for p in constructions["memorization"]["parameters"]}
    assert params["H"] == {"name": "H", "type": "int", "default": 4, "help": "number of heads H"}
    logic = {p["name"]: p for p in constructions["logic"]["parameters"]}
    assert logic["solution"]["default"] == "3" and logic["M"]["type"] == "int"


def test_list_shows_no_test_fixture_but_a_plugin_paper_when_asked_for(cli):
    env = {k: v for k, v in os.environ.items() if k != "ATTNLAB_PLUGINS"} | {"COLUMNS": "200"}
    p = subprocess.run([sys.executable, "-m", "attnlab.cli", "list", "--json"], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert {x["name"] for x in json.loads(p.stdout)["papers"]} == tree_papers()  # as a user sees it
    code, out, _ = cli(["list", "--json"])  # this session loads the tests' plugin paper
    assert code == 0 and "selftest" in {x["name"] for x in json.loads(out)["papers"]}


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
def test_bad_input_is_one_line_exit_2_no_traceback(cli_error, args, expected):
    line = cli_error(args)
    assert expected in line and "Traceback" not in line


@pytest.mark.parametrize("cmd", [[], ["verify"], ["list"], ["errata"]])
def test_help_on_every_command(cli, cmd):
    code, out, _ = cli([*cmd, "--help"])
    assert code == 0 and "Usage" in out


def test_a_claim_that_could_not_run_says_so_and_nothing_else(cli, monkeypatch, tmp_path, claim_cache):
    """The thesis's maps named by $ATTNLAB_THESIS_MAPS but absent: each of the three rows gives its id, its
    verdict, its statement once and why it did not run; no measured value, no criterion, no paper value."""
    import io

    from rich.console import Console

    import attnlab.cli as cli_module
    from attnlab.papers.transformer_math import thesis_maps
    from attnlab.registry import Claim

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(thesis_maps.THESIS_MAPS_ENV, "absent.npz")
    monkeypatch.setattr(thesis_maps, "_FITS", {})
    monkeypatch.setattr(Claim, "run", lambda self, seed=0: claim_cache.run(self, seed))  # afresh, not cached
    buf = io.StringIO()
    monkeypatch.setattr(cli_module, "console", Console(file=buf, width=80, color_system=None))
    code, _, err = cli(["verify", "transformer-math.head-thesis*"])
    out = buf.getvalue()
    assert code == 0, err
    why = ("not run: the thesis's attention maps are not at absent.npz, which ATTNLAB_THESIS_MAPS names: point it at "
           "a copy of conti-thesis-attention-maps.npz, or unset it to read the copy shipped with attnlab")
    blocks = re.split(r"\n\n(?=transformer-math\.)", out)
    ids = ["full-rank", "most-diagonal", "distances"]
    for name in ids:
        block = next(b for b in blocks if b.startswith(f"transformer-math.head-thesis-{name} "))
        lines = block.split("\n")
        assert lines[0] == f"transformer-math.head-thesis-{name}  inconclusive", lines[0]
        text = " ".join(" ".join(lines[1:]).split())
        assert text.count("statement:") == 1 and text.startswith("statement: ") and why in text, text
        assert "measured" not in text and "required" not in text and "paper:" not in text and ">=" not in text
    assert "../shared" not in out + err
    assert tally_of(out).startswith("3 claims · the texts: 0 reproduced, 0 differs, 2 inconclusive · attnlab's own "
                                    "statements: 0 holds, 0 refuted, 1 inconclusive"), tally_of(out)


def test_ctrl_c_in_a_command_says_it_stopped(cli, monkeypatch):
    """Ctrl-C in a command without a run to resume: one line saying which command stopped, exit status 130."""
    import attnlab.registry

    def interrupted(names):
        raise KeyboardInterrupt

    monkeypatch.setattr(attnlab.registry, "select_claims", interrupted)
    code, out, err = cli(["verify", "transformer-math"])
    assert (code, out, err) == (130, "", "attnlab: verify stopped (Ctrl-C)\n")
