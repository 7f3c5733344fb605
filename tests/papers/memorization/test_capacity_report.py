"""The capacity experiments' panels and summary rows (papers/memorization/capacity_report.py), by hand."""

from __future__ import annotations

from attnlab.papers.memorization.capacity_report import bound_info_row, monotone_row, panel, r2_row
from attnlab.papers.memorization.experiments.capacity_vs_head_size import HeadSizeConfig


def test_panel_and_rows_by_hand(panel_cells):
    cfg = HeadSizeConfig(d=8, n=4, H=2, d_h_grid=(2, 4, 8, 16), T_factors=(1.0,), steps=20, warmup=0)
    p = panel(cfg, panel_cells([2, 4, 8, 16], [4, 10, 14, 16]), "d_h", cfg.d_h_grid, cfg.H)
    assert p["bound"] == [3, 7, 7, 7]  # 2 (min(4, d_h) - 1) + 1
    assert p["largest_T_memorized"] == [4, 10, 14, 16]
    assert p["points"] == [[2, 4, 2], [2, 4, 4], [2, 4, 8], [2, 4, 16]]
    # least squares of T* on d_h: slope sum((v - 7.5)(t - 11)) / sum((v - 7.5)^2) = 86 / 115
    assert abs(p["fit"]["slope"] - 86 / 115) < 1e-12
    mono = monotone_row(p)
    assert (mono.status, mono.measured, mono.expected) == ("pass", "4, 10, 14, 16", "non-decreasing")
    assert monotone_row({**p, "largest_T_memorized": [4, 10, 9, 16]}).status == "FAIL"
    info = monotone_row({**p, "largest_T_memorized": [4, 10, 9, 16]}, judged=False)
    assert (info.status, info.expected) == ("info", None)
    bound = bound_info_row(p)
    assert bound.status == "info" and bound.measured == "3, 7, 7, 7"
    r2 = r2_row(p, judged=False)
    assert r2.status == "info" and r2.paper_value == ">= 0.98" and abs(r2.measured - p["fit"]["r2"]) == 0
    assert r2_row({**p, "values": [2, 4]}) is None  # a line through two points says nothing
