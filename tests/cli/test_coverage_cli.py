"""`attnlab coverage`: each text's ledger with what checks each entry, as a user runs it."""

import json

import pytest

from attnlab.registry import paper_ledger


def test_coverage_json_lists_every_entry_with_its_rows_or_its_reason(cli):
    code, out, err = cli(["coverage", "invertibility", "--no-verdicts", "--json"])
    assert code == 0, err
    (paper,) = json.loads(out)
    entries = paper["entries"]
    assert [e["id"] for e in entries] == [s.id for s in paper_ledger("invertibility")]
    for e in entries:
        assert e["quote"] and e["where"] and e["accounted"]
        assert e["checked"] == bool(e["claims"] or e["experiments"] or e["constructions"])
        assert e["checked"] or e["reason"], e["id"]
    assert paper["checked"] + paper["not_executable"] == len(entries) and paper["unaccounted"] == []


def test_coverage_gives_the_anchored_claims_verdicts(cli):
    code, out, err = cli(["coverage", "invertibility", "--json"])
    assert code == 0, err
    (paper,) = json.loads(out)
    with_claims = [e for e in paper["entries"] if e["claims"]]
    assert with_claims
    for e in with_claims:
        assert sorted(v["source"] for v in e["verdicts"]) == sorted(e["claims"])
        assert {v["verdict"] for v in e["verdicts"]} <= {"reproduced", "differs", "inconclusive"}


def test_coverage_table_ends_with_the_papers_counts(cli):
    code, out, err = cli(["coverage", "invertibility", "--no-verdicts"])
    assert code == 0, err
    n = len(paper_ledger("invertibility"))
    assert f"invertibility: {n} entries: " in out and " checked, " in out and " not executable" in out


@pytest.mark.parametrize("args, expected", [
    (["coverage", "nope"], "unknown paper 'nope'"),
    (["coverage", "logic", "--run", "/no/such/run"], "/no/such/run"),
])
def test_coverage_bad_input_is_one_line_exit_2(cli_error, args, expected):
    line = cli_error(args)
    assert expected in line and "Traceback" not in line
