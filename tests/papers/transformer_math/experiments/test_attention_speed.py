"""transformer-math.attention-speed on tiny sizes: registered, typed result, config errors."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.papers.transformer_math.experiments.attention_speed import (
    EXPERIMENT_ID,
    AttentionSpeedConfig,
    run as run_attention_speed,
)
from attnlab.registry import get_experiment


def test_registered_with_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is AttentionSpeedConfig
    quick = AttentionSpeedConfig()
    assert quick.n == (512, 1024, 2048) and "flex" not in quick.variants and quick.repeats == 2
    paper = AttentionSpeedConfig(scale="paper")
    assert paper.n[-1] == 16384 and paper.bench_config().variants is None  # every variant


@pytest.mark.slow
@pytest.mark.usefixtures("frozen_heap")  # attnlab.bench collects garbage before each measurement
def test_tiny_run(storable):
    res = run_attention_speed(AttentionSpeedConfig(n=(64, 128), variants=("softmax", "linear"), repeats=1))
    storable(res)
    assert res.deviations == []  # said: none (issue 34); attnlab's own targets, no text row
    assert [f.file for f in res.figures] == ["attention-time.png", "attention-memory.png"]
    assert res.figures[0].xscale == res.figures[0].yscale == "log"
    assert {s.label for s in res.figures[0].series} == {"sdpa", "softmax", "linear"}
    # the targets are attnlab's, not the text's: info rows that never decide a verdict
    assert {c.verdict for c in res.summary} == {"info"} and all("attnlab's target" in c.detail for c in res.summary)
    assert len(res.tables[0].rows) == 6


@pytest.mark.parametrize("kwargs, message", [
    ({"n": (0,)}, "n must be"), ({"variants": ("x",)}, "unknown variant"),
    ({"repeats": 0}, "repeats must be an integer >= 1"),
    ({"threads": 0}, "threads must be an integer >= 1"),
])
def test_config_errors(kwargs, message):
    with pytest.raises((ConfigError, UnknownNameError), match=message):
        AttentionSpeedConfig(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_is_refused_only_where_it_is_missing():
    with pytest.raises(ConfigError, match="CUDA is not available on this machine; use cpu"):
        AttentionSpeedConfig(device="cuda")


@pytest.mark.parametrize("scale, status, says", [
    ("paper", "pass", "attnlab's target <= 1.2 (met)"),
    ("paper", "FAIL", "attnlab's target <= 1.2 (missed)"),
    ("paper", "inconclusive: noisy", "attnlab's target <= 1.2, not decided: the repeated measurement is noise"),
    ("quick", "pass", "attnlab's target <= 1.2, indicative at quick sizes"),
])
def test_a_target_row_says_met_missed_or_noise_at_paper_scale(scale, status, says):
    from attnlab.papers.transformer_math.experiments.attention_speed import _target_check

    t = {"relation": "<=", "limit": 1.2, "status": status, "detail": "decided by 3 memory repeats", "statement": "s",
         "measured": 1.05, "target": "linear-memory"}
    row = _target_check(t, scale)
    assert row.verdict == "info" and row.detail.startswith(says) and row.detail.endswith("decided by 3 memory repeats")
