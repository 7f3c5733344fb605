"""The scaling sweep's rows read back and summarised over seeds, and the task-free control."""

from __future__ import annotations

import pytest

from attnlab.papers.transformer_math.scaling_sweep import VariantStats, by_d_head, stat, task_free


def _row(d: int, seed: int, steps: int, status: str = "ok") -> dict:
    r = {"run_id": f"r{d}{seed}", "status": status, "seed": seed, "d_head": d, "steps": 100,
         "loss_threshold": 0.1, "n": 8}
    for k in ("scaled", "unscaled"):
        r.update({f"{k}_steps_to_threshold": steps, f"{k}_reached_threshold": True, f"{k}_initial_entropy": 1.0,
                  f"{k}_initial_grad_norm": 0.5, f"{k}_final_loss": 0.05})
    return r


def test_by_d_head_keeps_finished_runs_in_ascending_d_head():
    groups = by_d_head([_row(16, 0, 20), _row(8, 0, 40), _row(8, 1, 60), _row(16, 1, 0, status="failed")])
    assert list(groups) == [8, 16] and [len(g) for g in groups.values()] == [2, 1]
    assert groups[8][1].scaled.steps_to_threshold == 60 and groups[8][0].variant("unscaled").final_loss == 0.05


def test_stats_over_seeds():
    assert stat([40, 60, 50]).to_dict() == {"mean": 50.0, "min": 40.0, "max": 60.0}
    groups = by_d_head([_row(8, 0, 40), _row(8, 1, 60), _row(16, 0, 20)])
    vs = VariantStats.of(list(groups.values()), "scaled")
    assert [s.mean for s in vs.steps_to_threshold] == [50.0, 20.0]
    assert list(vs.to_dict()) == ["steps_to_threshold", "initial_grad_norm", "initial_entropy", "final_loss"]


def test_task_free_ratios_below_one():
    """d_head 16, n = 8 random keys: entropy ratio 0.386 and gradient ratio 0.639 measured."""
    free = task_free(16, 8)
    assert (free["d_head"], free["n"], free["queries"]) == (16, 8, 4096)
    assert free["entropy"] == pytest.approx(0.386, abs=0.005) and free["gradient"] == pytest.approx(0.639, abs=0.005)
    assert task_free(16, 8) == free  # seeded
