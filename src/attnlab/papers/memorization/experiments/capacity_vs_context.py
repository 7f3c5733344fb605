"""memorization.capacity-vs-context: Figure 2(b) of the memorization paper, by batched training.

memorization-capacity-of-mha §5.2: "when further fixing the number of heads H,
increasing the context size n improves memorization" (Theorem 1's conclusion (2)).
Setting: d = 64, d_h = d, H fixed (paper: H = 20), one context E (n x d) shared by
all T examples, tokens and queries iid U(0, 1)^d, 100 uniform classes. For every
n of ``n_grid`` the data-set sizes T = f (H (min(n, d_h) - 1) + 1), f in
``T_factors``, are trained (:mod:`attnlab.papers.memorization.capacity_cells`).

Reported: the paper's plot (mean train accuracy vs T, one curve per n), T*_n (the
largest T every replicate memorized; a lower bound where the top of its grid was) against
n beside the bound H (n - 1) + 1, and checks of T*_n >= bound and of T*_n non-decreasing in n.

"T*_n >= bound" is attnlab's own statement (gradient descent reaches Theorem 1's bound);
"non-decreasing in n" checks §5.2's "memorization increases monotonically with n" (ledger
entry ``fig2-observed``), inconclusive where the experiment departs from the text's protocol
(:func:`attnlab.papers.memorization.capacity_report.deviations`) without a control run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnlab.config import check_int, param
from attnlab.papers.memorization.capacity_cells import AUTHORS_PROTOCOL, CapacitySettings, n_grid_within_d, run_points
from attnlab.papers.memorization.capacity_report import (
    deviation_ids,
    deviations,
    bound_info_row,
    bound_rows,
    cells_table,
    curves_figure,
    largest_figure,
    monotone_row,
    panel,
    panel_points,
)
from attnlab.registry import Experiment, register_experiment
from attnlab.results import ExperimentResult

EXPERIMENT_ID = "memorization.capacity-vs-context"
MONOTONE_ANCHOR = "memorization.fig2-observed"  # §5.2: "memorization increases monotonically with n"


@dataclass(frozen=True)
class ContextConfig(CapacitySettings):
    """Fig. 2(b): H heads fixed, context sizes n swept (each <= d, Assumption 2). The other
    fields: :class:`~attnlab.papers.memorization.capacity_cells.CapacitySettings` (``n`` is not
    used: n_grid sweeps it)."""

    PRESETS = {
        # quick: H = 4 instead of 20 and n up to 32 so that T stays in the hundreds
        "quick": {"H": 4, "n_grid": (4, 8, 16, 32), "T_factors": (1.0, 2.0, 4.0, 8.0), "steps": 600, "lr": 5e-3,
                  "warmup": 60, "batch": None, "min_epochs": 0, "replicates": 2, "eval_every": 50},
        "paper": {"H": 20, "n_grid": (4, 8, 16, 24, 32, 48, 64),
                  "T_factors": (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0), **AUTHORS_PROTOCOL, "replicates": 3},
    }

    H: int | None = param(None, "number of heads H (paper: 20)")
    n_grid: tuple[int, ...] | None = param(None, "context sizes n, each <= d")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        v = super().normal_form(values)
        v["n_grid"] = n_grid_within_d(v["n_grid"], v["d"], "context sizes")
        return v

    def validate(self) -> None:
        super().validate()
        check_int("H", self.H, 1)

    def points(self) -> list[tuple[int, int, int]]:
        return panel_points("n", self.n_grid, self.H, self.n, self.d_h)


def run(cfg: ContextConfig, run_dir=None) -> ExperimentResult:
    cells = run_points(cfg, panel_points("n", cfg.n_grid, cfg.H, cfg.n, cfg.d_h), run_dir, EXPERIMENT_ID)
    p = panel(cfg, cells, "n", cfg.n_grid, cfg.H)
    monotone = monotone_row(p, anchor=MONOTONE_ANCHOR, deviations=deviation_ids(cfg))
    summary = bound_rows(cfg, p, cfg.H) + [r for r in [monotone] if r] + [bound_info_row(p)]
    return ExperimentResult(
        summary=summary, tables=[cells_table(cfg, cells)], deviations=deviations(cfg),
        figures=[curves_figure(cfg, cells, p, "memorization-vs-T-per-context.png",
                               "Memorization vs T per context size n (Fig. 2(b))"),
                 largest_figure(cfg, p, "memorization-capacity-vs-context.png",
                                "Largest T memorized vs context size n (Fig. 2(b))")],
        notes=_notes(cfg), data={"cells": [c.to_dict() for c in cells], "panel": p})


def _notes(cfg: ContextConfig) -> list[str]:
    return [
        f"H = {cfg.H}, d = {cfg.d}, d_h = {cfg.d_h}, {cfg.n_classes} classes, shared context; "
        f"{cfg.describe_training()}; {cfg.replicates} replicates per (n, T).",
        "The paper (Fig. 2(b)) fixes H = 20 and trains with Adam lr 1e-3, batch 256, >= 50k steps; "
        + ("the quick scale uses H = 4, n up to 32 and a few hundred full-batch steps; T* is the largest grid "
           "value (multiples of the bound) memorized within the budget, a lower bound (>= T) where the top of "
           "the grid was memorized."
           if cfg.scale == "quick" else "this run uses the paper's protocol (AUTHORS_PROTOCOL)."),
        cfg.describe_model(),
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "Fig. 2(b): largest data set memorized by gradient descent vs context size n, beside "
                    "Theorem 1's bound", ContextConfig, run, anchors=(MONOTONE_ANCHOR,)))
