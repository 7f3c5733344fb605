"""Every table the CLI prints, at 80 columns (a pipe's width): no line longer than 80, every id on one line,
every number whole, nothing ellipsised (attnlab.terminal)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

import attnlab.cli as cli
from helpers import exit_status
from attnlab.commands.bench import print_bench
from attnlab.terminal import Col, fmt, layout, print_table, widths

WIDTH = 80


@pytest.fixture
def narrow(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(cli, "console", Console(file=buf, width=WIDTH, force_terminal=False, color_system=None))
    return buf


def _check(out: str, whole: list[str]) -> list[str]:
    lines = out.splitlines()
    assert max(map(len, lines)) <= WIDTH
    assert "\u2026" not in out  # rich's ellipsis: something was cut
    missing = [w for w in whole if not any(w in line for line in lines)]
    assert not missing, missing[:5]
    return lines


def test_list_keeps_every_id_on_one_line(narrow):
    from attnlab.registry import all_claims, all_experiments, papers

    assert exit_status(["list"]) == 0
    ids = [c.id for c in all_claims()] + [e.id for e in all_experiments()] + list(papers())
    _check(narrow.getvalue(), ids)


def test_verify_keeps_ids_and_numbers_whole(narrow):
    from attnlab.registry import select_claims

    code = exit_status(["verify", "invertibility"])
    assert code in (0, 1)
    claims = select_claims(["invertibility"])
    results = [c.run(0) for c in claims]
    whole = [c.id for c in claims] + [r.check.measured_text for r in results] + [r.check.criterion for r in results]
    _check(narrow.getvalue(), whole)


def _bench_result() -> dict:
    rows = []
    for v in ("softmax", "softmax-causal", "sliding-window-causal", "linear-causal", "performer", "sdpa-flash"):
        for n in (512, 4096, 16384):
            rows.append({"variant": v, "n": n, "status": "ok", "time_ms": 1234.5678 * n / 512, "q1_ms": 1.0,
                         "q3_ms": 1.25, "gflops": 183.456, "pct_ceiling": 91.23, "peak_mb": 123456.7,
                         "ratio": 12.345, "reference": "sdpa", "note": ""})
    return {"rows": rows, "env": {"device": "cpu", "device_name": "AMD EPYC 7B13", "threads": 2,
                                  "load_average_1m": 1.23},
            "config": {"dtype": "float32"}, "ceiling": {"gflops": 201.3},
            "crossovers": {"linear-causal": {"crossover_n": 2345.6, "status": "measured"}},
            "targets": [{"statement": "sliding window at n = 16384 is faster than dense SDPA", "measured": 0.123,
                         "relation": "<=", "limit": 0.5, "status": "pass", "detail": "ratio of medians"}]}


def test_bench_table_splits_instead_of_cutting(narrow):
    print_bench(cli.console, _bench_result())
    out = narrow.getvalue()
    whole = ["sliding-window-causal", "16384", f"{1234.5678 * 32:.3g}", fmt(123456.7), "12.3x vs sdpa", "183",
             "91.2", "2346"]
    lines = _check(out, whole)
    assert any("(continued)" in line for line in lines)  # the columns that do not fit moved to a second table


def test_construct_table(narrow):
    assert exit_status(["construct", "invertibility"]) in (0, 1)
    _check(narrow.getvalue(), ["verdict"])


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_layout_never_exceeds_the_width(width):
    cols = [Col("id", "key"), Col("n", "number"), Col("time ms", "number"), Col("note"), Col("GFLOP/s", "number")]
    rows = [["memorization.proposition3-rank", "16384", "1234.567", "a long note " * 6, "183.4"]] * 3
    groups = layout(cols, rows, width)
    for g in groups:
        assert g[0] == 0  # the key column leads every group
        sub = [[r[i] for i in g] for r in rows]
        w = widths([cols[i] for i in g], sub, width)
        assert w[0] == len("memorization.proposition3-rank")
        if len(g) > 2:
            assert sum(w) + 3 * len(w) + 1 <= width
    assert sorted({i for g in groups for i in g}) == list(range(5))


def test_stacked_layout_for_prose():
    buf = io.StringIO()
    console = Console(file=buf, width=WIDTH, color_system=None)
    rows = [["logic.category-descent", "reproduced", "0.0123", "<= 0.05", "a statement " * 20]]
    print_table(console, "t", [Col("claim", "key"), Col("verdict", "key"), Col("measured", "number"),
                               Col("required", "number"), Col("statement")], rows, stack=True)
    out = buf.getvalue()
    assert re.search(r"^logic\.category-descent  reproduced  measured 0\.0123  required <= 0\.05$", out, re.M)
    assert max(map(len, out.splitlines())) <= WIDTH


def test_a_number_columns_header_breaks_between_words_and_is_never_cut():
    buf = io.StringIO()
    console = Console(file=buf, width=WIDTH, force_terminal=False, color_system=None)
    print_table(console, "t", [Col("experiment", "key"), Col("one GPU, rated", "number")], [["a.b", "98 s"]])
    out = buf.getvalue()
    header = [line for line in out.splitlines() if "GPU" in line or "rated" in line]
    assert "one" in out and "GPU," in out and "rated" in out and "98 s" in out
    assert all(len(line) <= WIDTH for line in out.splitlines()) and header
