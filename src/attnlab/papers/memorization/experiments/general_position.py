"""memorization.general-position: Appendix I.1 / Figure 4 of the memorization paper.

memorization-capacity-of-mha Appendix I.1: the setting of §5.2 but with one context
per example, every token iid U(0, 1)^64 (x_1^(t), ..., x_n^(t), x^(t) for all t),
so all tokens of all examples are in general position. The paper's preliminary
Fig. 4: T* stays linear in H, its linearity in n weakens, and it conjectures an
O(H d) bound, with H (d - 1) + 1 (the rank cap of Proposition 5 for contexts whose
tokens have a constant coordinate sum) "a better alternative" than H (n - 1) + 1.

Theorem 1 still applies here (its assumptions hold almost surely), so T* >= H
(min(n, d_h) - 1) + 1 is checked (a T* at the top of its grid is a lower bound) as attnlab's
own statement (gradient descent reaches the bound; the theorem says such weights exist);
H (d - 1) + 1 is shown beside it and the ratio T* / (H (d - 1) + 1) reported. The H panel's
R^2 and monotonicity check App. I.1's "the linearity in H still remains" (ledger entry
``appi1-linear-heads``; R^2 against §5.2's 0.98, App. I.1 gives no number), inconclusive where
the experiment departs from the text's protocol (capacity_report.deviations) without a control. Uniform tokens do not have a constant coordinate
sum, so Proposition 5 does not cap rank Z here (FIELD-NOTES: random weights give
rank Z = H d).
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.papers.memorization.capacity_cells import AUTHORS_PROTOCOL, TwoPanelSettings
from attnlab.papers.memorization.capacity_report import (
    deviation_ids,
    deviations,
    bound_info_row,
    bound_rows,
    cells_table,
    curves_figure,
    general_position_series,
    largest_figure,
    monotone_row,
    r2_row,
    run_h_and_n_panels,
)
from attnlab.papers.memorization.model import memorization_bound
from attnlab.registry import Experiment, register_experiment
from attnlab.checks import Check, info
from attnlab.results import ExperimentResult

EXPERIMENT_ID = "memorization.general-position"
LINEAR_H_ANCHOR = "memorization.appi1-linear-heads"  # App. I.1: "the linearity in H still remains"


@dataclass(frozen=True)
class GeneralPositionConfig(TwoPanelSettings):
    """App. I.1 / Fig. 4: one context per example; an H panel (n = ``n``) and an n panel
    (H = ``H``; empty n_grid: none). The other fields:
    :class:`~attnlab.papers.memorization.capacity_cells.TwoPanelSettings`."""

    CONTEXT = "per-example"
    PRESETS = {
        "quick": {"H_grid": (1, 2, 4), "H": 2, "n_grid": (8, 16, 32), "T_factors": (1.0, 2.0, 4.0, 8.0, 12.0),
                  "steps": 600, "lr": 5e-3, "warmup": 60, "batch": None, "min_epochs": 0, "replicates": 1,
                  "eval_every": 50},
        "paper": {"H_grid": (1, 2, 4, 8, 16), "H": 20, "n_grid": (4, 8, 16, 24, 32, 48, 64),
                  "T_factors": (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0), **AUTHORS_PROTOCOL, "replicates": 3},
    }


def _vs_hd_row(cfg: GeneralPositionConfig, p: dict) -> Check:
    hd = [memorization_bound(h, cfg.d) for h, _, _ in p["points"]]
    ratios = [(">= " if c else "") + f"{t / b:.2f}" for t, b, c in zip(p["largest_T_memorized"], hd, p["censored"])]
    return info(f"T* / (H(d-1)+1) per {p['swept']} (App. I.1's conjectured O(H d))", ", ".join(ratios),
                paper_value="O(H d) conjectured", where="App. I.1",
                detail=f"{p['swept']} = {p['values']}; H(d-1)+1 = {hd}")


def run(cfg: GeneralPositionConfig, run_dir=None) -> ExperimentResult:
    cells, panels = run_h_and_n_panels(cfg, run_dir, EXPERIMENT_ID)
    summary, figures = [], []
    for p, H, tag in zip(panels, (cfg.H_grid[0], cfg.H), ("H", "n")):
        name = {"H": "heads", "n": "context"}[p["swept"]]
        where = "App. I.1, Fig. 4"
        summary += bound_rows(cfg, p, H, where)
        # the paper: linearity in H remains (judged against R^2 >= 0.98); in n it weakens (info)
        text = dict(judged=p["swept"] == "H", where=where, anchor=LINEAR_H_ANCHOR, deviations=deviation_ids(cfg))
        summary += [r for r in [r2_row(p, **text)] if r]
        summary += [r for r in [monotone_row(p, **text)] if r]
        summary += [_vs_hd_row(cfg, p), bound_info_row(p)]
        figures += [curves_figure(cfg, cells, p, f"general-position-vs-T-per-{name}.png",
                                  f"Memorization vs T per {tag}, per-example contexts (Fig. 4)"),
                    largest_figure(cfg, p, f"general-position-capacity-vs-{name}.png",
                                   f"Largest T memorized vs {tag}, per-example contexts (Fig. 4)",
                                   extra=general_position_series(p, cfg.d))]
    return ExperimentResult(summary=summary, tables=[cells_table(cfg, cells)], figures=figures,
                            notes=_notes(cfg), data={"cells": [c.to_dict() for c in cells], "panels": panels},
                            deviations=deviations(cfg))


def _notes(cfg: GeneralPositionConfig) -> list[str]:
    return [
        f"Per-example contexts: every token of every example iid U(0, 1)^{cfg.d}; {cfg.n_classes} classes; "
        f"{cfg.describe_training()}; {cfg.replicates} replicate(s) per cell; H panel at n = {cfg.n}, "
        f"n panel at H = {cfg.H}, d_h = {cfg.d_h}.",
        "Monotonicity in n is shown but not judged: App. I.1 reports that the dependence on n weakens here.",
        ("Quick scale: H up to 4, n panel at H = 2 (the paper: H = 20), a few hundred full-batch Adam steps, "
         "one replicate; T* is the largest grid value (multiples of the Theorem 1 bound) memorized within "
         "the budget, a lower bound (>= T) where the top of the grid was memorized."
         if cfg.scale == "quick" else "The paper's protocol: Adam lr 1e-3, batch 256, >= 50k steps."),
        cfg.describe_model(),
    ]


register_experiment(Experiment(EXPERIMENT_ID,
                    "App. I.1 / Fig. 4: memorization with per-example contexts in general position vs H and n, "
                    "beside H(n-1)+1 and H(d-1)+1", GeneralPositionConfig, run,
                    anchors=(LINEAR_H_ANCHOR,)))
