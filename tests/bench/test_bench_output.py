"""What `attnlab bench` prints at 80 columns: no IQR from one repeat, skip reasons folded at the console's
width, and no variant name split across lines in the targets table."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from attnlab.bench.targets import crossovers, evaluate_targets
from attnlab.commands.bench import print_bench
from helpers import run_cli

SKIP = ("materialises n x n: skipped above n = 4096 (memory): the explicit path holds the logits and the weights "
        "P, two n x n tensors per head, 8 GiB at n = 16384")
FAILED = "RuntimeError: could not compile FlexAttention for softmax-causal-padding at this size on this device"


def _row(variant: str, n: int, time_ms: float, peak_mb: float | None, *, order: str = "linear",
         masked: bool = False, status: str = "ok", note: str = "", repeats: int = 3) -> dict:
    return {"variant": variant, "n": n, "time_ms": time_ms, "q1_ms": 0.9 * time_ms if repeats > 1 else None,
            "q3_ms": 1.1 * time_ms if repeats > 1 else None, "gflops": 10.0, "pct_ceiling": 5.0,
            "peak_mb": peak_mb, "peak_mb_rounds": None if peak_mb is None else [peak_mb] * 3, "order": order,
            "masked": masked, "status": status, "note": note, "ratio": 1.2, "reference": "sdpa-causal",
            "causal": masked}


def _result(repeats: int = 3) -> dict:
    rows = []
    for n in (2048, 4096, 8192):
        s = n / 8192
        rows += [_row("sdpa-causal", n, 600 * s * s, 10.0, order="quadratic", repeats=repeats),
                 _row("softmax-causal-padding", n, 720 * s * s, 20 * s, order="quadratic", masked=True,
                      repeats=repeats),
                 _row("linear-causal", n, 50 * s, 8 * s, repeats=repeats),
                 _row("window-gather", n, 60 * s, 4 * s, repeats=repeats),
                 _row("softmax-explicit", n, 0.0, None, status="skipped", note=SKIP),
                 _row("window-flex", n, 0.0, None, status="failed", note=FAILED)]
    return {"ceiling": {"gflops": 100.0}, "config": {"dtype": "float32"}, "rows": rows,
            "env": {"device": "cpu", "device_name": "x86_64", "threads": 2, "load_average_1m": 1.0},
            "crossovers": crossovers(rows), "targets": evaluate_targets(rows)}


def _printed(result: dict, width: int = 80) -> str:
    buf = io.StringIO()
    print_bench(Console(file=buf, width=width, color_system=None, force_terminal=False), result)
    return buf.getvalue()


def _header(text: str) -> str:
    """The first table's header lines, joined."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    end = next(i for i, line in enumerate(lines) if line.startswith("┡"))
    return " ".join(lines[start + 1:end])


def test_one_repeat_prints_no_iqr_and_says_why():
    with_spread, one = _printed(_result(repeats=3)), _printed(_result(repeats=1))
    assert "IQR" in _header(with_spread) and "n/a (1 repeat" not in with_spread
    assert "IQR" not in _header(one)
    assert "  IQR ms: n/a (1 repeat: no spread is known; --repeats 3 or more gives one)" in one.splitlines()


@pytest.mark.slow
def test_cli_repeats_1_leaves_the_quartiles_out():
    out = run_cli(["bench", "--n", "64", "--variant", "softmax", "--repeats", "1"], columns=80)
    assert out.returncode == 0, out.stderr
    assert "IQR" not in _header(out.stdout) and "IQR ms: n/a (1 repeat" in out.stdout
    assert " 0 " not in out.stdout.split("IQR ms: n/a")[0].replace("│", " ")  # no cell reads 0
    rc = run_cli(["bench", "--n", "64", "--variant", "softmax", "--repeats", "1", "--json"], columns=80)
    rows = json.loads(rc.stdout)["rows"]
    assert {(r["q1_ms"], r["q3_ms"]) for r in rows} == {(None, None)} and all(r["time_ms"] > 0 for r in rows)


def test_skip_reasons_fold_at_the_console_width():
    lines = _printed(_result()).splitlines()
    assert max(len(line) for line in lines) <= 80
    for name, note in (("softmax-explicit", SKIP), ("window-flex", FAILED)):
        first = next(i for i, line in enumerate(lines) if line.startswith(f"  {name}: "))
        block = [lines[first]]
        for line in lines[first + 1:]:
            if not (line.startswith("    ") and line[4] != " "):
                break
            block.append(line)  # a further line of the same reason, indented by four
        assert len(block) >= 2  # folded rather than left to overflow the console
        assert " ".join(line.strip() for line in block) == f"{name}: {note}"  # nothing cut


def test_targets_table_keeps_every_name_whole_at_80_columns():
    text = _printed(_result())
    body = text[text.index("targets"):]
    assert max(len(line) for line in text.splitlines()) <= 80
    names = ("softmax-causal-padding", "linear-causal", "window-gather")
    cells = [c.strip() for line in body.splitlines() if line.startswith("│") for c in line.split("│")[1:-1]]
    words = {w.strip(",;") for c in cells for w in c.split()}
    assert set(names) <= words  # each printed whole on one line
    # and never in pieces: a word that starts like a name ("softmax-", "window-") is that name
    assert {w for w in words if w.startswith(("softmax-", "linear-", "window-"))} == set(names)
