"""A memory slope decided from repeated rounds (attnlab.bench.stability) and the benchmark's rounds.

The noise is scripted: ``peak_memory`` is replaced by a function that runs the call and returns a
peak chosen per round, so that one round's slope is 1.36 (ln 2.56 / ln 2) or 0.98 (ln 1.97 / ln 2),
the two values one variant gave in two identical runs."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator

import pytest

import attnlab.bench.run as bench_run
from attnlab.bench.memory import PeakMemory
from attnlab.bench.stability import MAX_ROUNDS, NOISY, round_slopes, slope_verdict, wants_rounds
from attnlab.bench.targets import evaluate_targets
from helpers import run_cli
from tolerances import FLOAT64

STEEP, FLAT = math.log(2.56) / math.log(2), math.log(1.97) / math.log(2)  # 1.356, 0.978


def test_slope_verdict_by_hand():
    # median 1.0; inclusive quartiles of (0.98, 1.0, 1.35): 0.99 and 1.175, so IQR 0.185 < margin 0.2
    v = slope_verdict((1.35, 0.98, 1.0), 1.2)
    assert v.status == "pass" and v.median == pytest.approx(1.0, abs=FLOAT64)
    assert v.spread == pytest.approx(0.185, abs=FLOAT64) and v.rounds == 3 and not wants_rounds(v)
    # median 1.3, margin 0.1 against IQR 0.175: undecided, one more round wanted
    v = slope_verdict((1.0, 1.3, 1.35), 1.2)
    assert v.status == NOISY and v.spread == pytest.approx(0.175, abs=FLOAT64) and wants_rounds(v)
    assert slope_verdict((1.5, 1.5, 1.5), 1.2).status == "FAIL"  # no spread: decided
    assert slope_verdict((), 1.2).status == "not measured"
    one = slope_verdict((1.0,), 1.2)
    assert one.status == "pass" and wants_rounds(one)  # decided, but fewer than MIN_ROUNDS rounds
    assert not wants_rounds(slope_verdict((1.0, 1.4) * (MAX_ROUNDS // 2) + (1.2,), 1.2))  # out of rounds


def _rows(peaks_128: list[float], variant: str = "linear") -> list[dict]:
    """A linear-order variant at n = 64 (peak 1 MiB every round) and 128 (``peaks_128``)."""
    return [{"variant": variant, "n": n, "status": "ok", "order": "linear", "masked": False, "ratio": None,
             "time_ms": 1.0, "peak_mb": p[0], "peak_mb_rounds": list(p)}
            for n, p in ((64, [1.0] * len(peaks_128)), (128, peaks_128))]


def test_round_slopes_pair_the_rounds_across_n():
    assert round_slopes(_rows([2.56, 1.97]), "linear") == pytest.approx((STEEP, FLAT), abs=FLOAT64)


def _scripted(peaks_128: Iterator[float]) -> Callable[..., PeakMemory]:
    """A peak_memory that runs fn and returns 1 MiB at n = 64 and the next of ``peaks_128`` at n = 128."""
    def peak_memory(fn: Callable[[], object], *, device: str = "cpu") -> PeakMemory:
        n = fn().shape[-2]
        return PeakMemory(int((1.0 if n == 64 else next(peaks_128)) * 2**20), "scripted")
    return peak_memory


@pytest.mark.parametrize("first, later, status, rounds", [
    (2.56, [2.0, 2.0], "pass", 3),  # one steep round is outvoted by two linear ones: 3 rounds decide
    (2.56, [2.56, 2.56], "FAIL", 3),  # steep every time: no spread, decided in 3 rounds
    pytest.param(2.56, [1.97, 2.56] * 4, NOISY, MAX_ROUNDS, marks=pytest.mark.slow),  # 1.36, 0.98 alternate
])
def test_settle_memory_measures_rounds_until_the_verdict_is_stable(monkeypatch, first, later, status, rounds):
    from attnlab.bench.run import BenchConfig, settle_memory

    monkeypatch.setattr(bench_run, "peak_memory", _scripted(iter(later)))
    rows = _rows([first])
    settle_memory(BenchConfig(n=(64, 128), variants=("linear",), repeats=1), rows)
    assert [len(r["peak_mb_rounds"]) for r in rows] == [rounds, rounds]
    target = {t["target"]: t for t in evaluate_targets(rows)}["linear-memory"]
    assert target["status"] == status and target["repeats"] == rounds
    word = "noisy after" if status == NOISY else "decided by"
    assert target["detail"].startswith(f"{word} {rounds} memory repeats; linear ")
    # the median round; the scripted bytes are whole, so within 1e-6 of the MiB given
    assert rows[1]["peak_mb"] == pytest.approx(sorted([first, *later][:rounds])[rounds // 2], rel=1e-6)


@pytest.mark.slow
def test_cli_says_noise_and_how_many_repeats_at_80_columns(monkeypatch):
    calls: dict[int, int] = defaultdict(int)

    def peak_memory(fn: Callable[[], object], *, device: str = "cpu") -> PeakMemory:
        # per n: the sweep measures sdpa, then linear; later calls are linear's further rounds
        n = fn().shape[-2]
        calls[n] += 1
        steep = calls[n] % 2 == 0  # linear's rounds at n = 128 alternate 2.56, 1.97, 2.56, ...
        return PeakMemory(int((1.0 if n == 64 else 2.56 if steep else 1.97) * 2**20), "scripted")

    monkeypatch.setattr(bench_run, "peak_memory", peak_memory)
    out = run_cli(["bench", "--n", "64,128", "--variant", "linear", "--repeats", "1"], columns=80)
    assert out.returncode == 0, out.stderr
    status, detail = (_column(out.stdout, "targets", j) for j in (3, 4))
    assert status.split() == ["not", "measured"] * 4 + ["inconclusive:", "noisy", "not", "measured"]
    assert detail == f"noisy after {MAX_ROUNDS} memory repeats; linear 1.36 (noisy: 0.98-1.36)"
    assert "FAIL" not in out.stdout and max(len(line) for line in out.stdout.splitlines()) <= 80


def _column(text: str, title: str, j: int) -> str:
    """Column ``j`` of the table titled ``title`` in ``text``: its cells' lines joined by spaces."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title)
    cells = []
    for line in lines[start + 4:]:  # title, top border, header, rule
        if not line.startswith("│"):
            break
        cells.append(line.split("│")[j + 1].strip())
    return " ".join(c for c in cells if c)
