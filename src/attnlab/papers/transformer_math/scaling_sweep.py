"""The transformer-math.scaling sweep's rows read back and summarised over seeds, and the task-free
control of its initial rows.

A sweep over d_head and seeds stores one row per run (:func:`~attnlab.papers.transformer_math.scaling_training.scalars_of`'s
columns); :func:`by_d_head` reads the finished ones back as :class:`SweepRun`, :class:`VariantStats` gives
each model's mean, smallest and largest value over the seeds of each d_head, and :func:`task_free` measures
the initial rows' ratios unscaled / scaled with the task removed (math-behind-transformers §1.2.3: the
softmax at initialisation, logits q . k against q . k / sqrt(d_head)).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from attnlab.papers.transformer_math.query_softmax import query_statistics
from attnlab.stored import Stored

TASK_FREE_QUERIES = 4096  # queries of the task-free control (query_softmax.query_statistics), seed 0


@dataclass(frozen=True)
class VariantRow:
    """One model's columns of a sweep row that the report reads (``{variant}_{field}``, :class:`~attnlab.papers.transformer_math.scaling_training.VariantScalars`)."""

    steps_to_threshold: float  # steps to held-out loss <= loss_threshold (steps + 1: never)
    reached_threshold: bool  # whether the threshold was reached within the budget
    initial_grad_norm: float  # mean ||dl/dz|| at step 0
    initial_entropy: float  # mean attention entropy H(a) at step 0
    final_loss: float  # held-out loss at the last evaluated step


@dataclass(frozen=True)
class SweepRun:
    """One finished run of the sweep (a table row with status "ok"): its d_head, budget, threshold and
    context length, and each model's :class:`VariantRow`."""

    d_head: int
    steps: int  # the step budget
    loss_threshold: float
    n: int  # context length (log n: uniform attention entropy)
    scaled: VariantRow  # c = 1/sqrt(d_head)
    unscaled: VariantRow  # c = 1

    @classmethod
    def of(cls, row: dict[str, Any]) -> "SweepRun":
        """The run of one stored sweep row."""
        def variant(k: str) -> VariantRow:
            return VariantRow(**{f.name: row[f"{k}_{f.name}"] for f in dataclasses.fields(VariantRow)})

        return cls(d_head=int(row["d_head"]), steps=int(row["steps"]), loss_threshold=float(row["loss_threshold"]),
                   n=int(row["n"]), scaled=variant("scaled"), unscaled=variant("unscaled"))

    def variant(self, k: str) -> VariantRow:
        """The row of the model ``k`` ("scaled" or "unscaled")."""
        return {"scaled": self.scaled, "unscaled": self.unscaled}[k]


def by_d_head(rows: list[dict[str, Any]]) -> dict[int, list[SweepRun]]:
    """The finished runs of the sweep's rows, grouped by d_head (ascending)."""
    groups: dict[int, list[SweepRun]] = {}
    for r in rows:
        if r.get("status") == "ok":
            run = SweepRun.of(r)
            groups.setdefault(run.d_head, []).append(run)
    return dict(sorted(groups.items()))


@dataclass(frozen=True)
class Stat(Stored):
    """Mean, smallest and largest of one number over the seeds of one d_head."""

    mean: float
    min: float
    max: float


def stat(values: Sequence[float]) -> Stat:
    """The :class:`Stat` of ``values``."""
    x = np.array([float(v) for v in values])
    return Stat(mean=float(x.mean()), min=float(x.min()), max=float(x.max()))


@dataclass(frozen=True)
class VariantStats(Stored):
    """One model's :class:`Stat` over seeds, one per d_head of the sweep (D of them)."""

    steps_to_threshold: list[Stat]  # (D,) steps to held-out loss <= loss_threshold
    initial_grad_norm: list[Stat]  # (D,) mean ||dl/dz|| at step 0
    initial_entropy: list[Stat]  # (D,) mean attention entropy H(a) at step 0
    final_loss: list[Stat]  # (D,) held-out loss at the last evaluated step

    @classmethod
    def of(cls, groups: Sequence[Sequence[SweepRun]], k: str) -> "VariantStats":
        """The stats of model ``k`` over each group of runs (one group per d_head)."""
        rows = [[r.variant(k) for r in g] for g in groups]
        return cls(steps_to_threshold=[stat([v.steps_to_threshold for v in g]) for g in rows],
                   initial_grad_norm=[stat([v.initial_grad_norm for v in g]) for g in rows],
                   initial_entropy=[stat([v.initial_entropy for v in g]) for g in rows],
                   final_loss=[stat([v.final_loss for v in g]) for g in rows])




def task_free(d_head: int, n: int) -> dict[str, float]:
    """The initial rows' ratios unscaled / scaled with the task removed (the experiment's deviation copy-task): the mean over
    TASK_FREE_QUERIES queries of the softmax entropy and of ||J_s^T g|| (g a random unit upstream gradient)
    for z_j = q . k_j, q and n keys with N(0, 1) entries of width d_head (what the copy model's q and keys
    have at initialisation, Var(q . k) = d_head), against z / sqrt(d_head)."""
    s = query_statistics(d_head, n, TASK_FREE_QUERIES, generator=torch.Generator().manual_seed(0))
    return {"entropy": float(s["entropy_raw"].mean() / s["entropy_scaled"].mean()),
            "gradient": float(s["gradient_norm_raw"].mean() / s["gradient_norm_scaled"].mean()),
            "d_head": d_head, "n": n, "queries": TASK_FREE_QUERIES}
