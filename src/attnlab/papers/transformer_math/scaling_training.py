"""The scaled and the unscaled copy model trained side by side (transformer-math.scaling, §1.2.3), and
the numbers one run reports.

Two :class:`~attnlab.papers.transformer_math.scaling_model.CopyAttention` models with the same initial
weights, trained by Adam on the same positional-copy batches, differing only in the logit scale c
(:data:`VARIANTS`: 1/sqrt(d_head) or 1); each measured on a fixed held-out batch at step 0, every
``eval_every`` steps and at the last (:func:`~attnlab.papers.transformer_math.scaling_model.measure`).
steps_to_threshold is the first evaluated step whose held-out loss is <= loss_threshold, ``steps + 1``
when the budget ends first.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.papers.transformer_math.scaling_model import CopyAttention, Measurement, measure
from attnlab.stored import Stored
from attnlab.tasks import copy_batch

VARIANTS = {"scaled": "1/sqrt(d)", "unscaled": "none"}  # name -> scale of attention_logits


class PairSettings(Protocol):
    """What :func:`train_pair` reads of a config (ScalingConfig's fields)."""

    d_head: int
    d_model: int
    n: int
    V: int
    steps: int
    lr: float
    batch: int
    eval_every: int
    eval_batch: int
    loss_threshold: float
    logit_init_scale: float
    stop_at_threshold: bool
    seed: int
    device: str


def _generators(seed: int, device: str) -> list[torch.Generator]:
    """Independent generators for init (CPU), training data and held-out data."""
    states = np.random.SeedSequence(seed).spawn(3)
    devices = ("cpu", device, device)
    return [torch.Generator(device=d).manual_seed(int(s.generate_state(1)[0])) for s, d in zip(states, devices)]


@dataclass(frozen=True)
class History(Stored):
    """One model's held-out :func:`measure` over training, one entry per evaluated step (E of them)."""

    step: tuple[int, ...]  # (E,) the evaluated steps: 0, every eval_every, the last
    loss: tuple[float, ...]  # (E,) mean held-out cross-entropy
    accuracy: tuple[float, ...]  # (E,) held-out accuracy
    entropy: tuple[float, ...]  # (E,) mean attention entropy H(a), log n uniform, 0 one-hot
    grad_norm: tuple[float, ...]  # (E,) mean ||dl_i/dz_i|| through the softmax

    @classmethod
    def of(cls, records: Sequence[tuple[int, Measurement]]) -> "History":
        """The history of (step, measurement) pairs in the order they were taken."""
        return cls(step=tuple(s for s, _ in records), loss=tuple(m.loss for _, m in records),
                   accuracy=tuple(m.accuracy for _, m in records), entropy=tuple(m.entropy for _, m in records),
                   grad_norm=tuple(m.grad_norm for _, m in records))


def train_pair(cfg: PairSettings, log: Callable[[dict[str, Any]], None] | None = None) -> dict[str, History]:
    """Train the scaled and the unscaled model (same init, same batches) with Adam.

    Returns {variant: History} (variant: "scaled", "unscaled"): the held-out :func:`measure` at
    step 0, every ``eval_every`` steps and at the last step, each also passed to ``log`` as
    {"d_head", "seed", "variant", "step", **measurement}.
    """
    g_init, g_data, g_eval = _generators(cfg.seed, cfg.device)
    first = CopyAttention(V=cfg.V, n=cfg.n, d_model=cfg.d_model, d_head=cfg.d_head, scale=VARIANTS["scaled"],
                          logit_init_scale=cfg.logit_init_scale, generator=g_init).to(cfg.device)
    models = {"scaled": first, "unscaled": copy.deepcopy(first)}
    models["unscaled"].scale = VARIANTS["unscaled"]
    opts = {k: torch.optim.Adam(m.parameters(), lr=cfg.lr) for k, m in models.items()}
    held_out = copy_batch(cfg.eval_batch, cfg.n, cfg.V, generator=g_eval)
    records: dict[str, list[tuple[int, Measurement]]] = {k: [] for k in models}

    def evaluate(step: int) -> None:
        for k, m in models.items():
            rec = measure(m, held_out)
            records[k].append((step, rec))
            if log is not None:
                log({"d_head": cfg.d_head, "seed": cfg.seed, "variant": k, "step": step, **rec.to_dict()})

    evaluate(0)
    step = 0
    while step < cfg.steps and not (cfg.stop_at_threshold and _both_reached(records, cfg.loss_threshold)):
        step += 1
        b = copy_batch(cfg.batch, cfg.n, cfg.V, generator=g_data)  # shared by both models
        for k, m in models.items():
            loss = F.cross_entropy(m(b), b.targets)
            opts[k].zero_grad(set_to_none=True)
            loss.backward()
            opts[k].step()
        if step % cfg.eval_every == 0 or step == cfg.steps:
            evaluate(step)
    return {k: History.of(r) for k, r in records.items()}


def _both_reached(records: dict[str, list[tuple[int, Measurement]]], threshold: float) -> bool:
    """Whether every model's held-out loss has been <= ``threshold`` at some evaluated step."""
    return all(min(m.loss for _, m in r) <= threshold for r in records.values())


@dataclass(frozen=True)
class VariantScalars:
    """One model's numbers of one run; the sweep row holds each as the column ``{variant}_{field}``."""

    steps_to_threshold: int  # first evaluated step with held-out loss <= loss_threshold; steps + 1 if never
    reached_threshold: bool  # whether that step exists within the budget
    final_loss: float  # held-out loss at the last evaluated step
    final_accuracy: float  # held-out accuracy at the last evaluated step
    initial_loss: float  # held-out loss at step 0
    initial_entropy: float  # mean attention entropy H(a) at step 0
    final_entropy: float  # mean attention entropy H(a) at the last evaluated step
    initial_grad_norm: float  # mean ||dl/dz|| at step 0
    final_grad_norm: float  # mean ||dl/dz|| at the last evaluated step

    def to_dict(self, variant: str) -> dict[str, float | int | bool]:
        """The sweep-row columns {f"{variant}_{field}": value}, fields in declaration order."""
        return {f"{variant}_{f.name}": getattr(self, f.name) for f in dataclasses.fields(self)}


def variant_scalars(cfg: PairSettings, h: History) -> VariantScalars:
    """One model's :class:`VariantScalars` from its history (module docstring for steps_to_threshold)."""
    hit = [s for s, loss in zip(h.step, h.loss) if loss <= cfg.loss_threshold]
    return VariantScalars(steps_to_threshold=hit[0] if hit else cfg.steps + 1, reached_threshold=bool(hit),
                          final_loss=h.loss[-1], final_accuracy=h.accuracy[-1], initial_loss=h.loss[0],
                          initial_entropy=h.entropy[0], final_entropy=h.entropy[-1],
                          initial_grad_norm=h.grad_norm[0], final_grad_norm=h.grad_norm[-1])


def scalars_of(cfg: PairSettings, history: dict[str, History]) -> dict[str, float | int | bool]:
    """The run's scalars, one row of the sweep table: every variant's :class:`VariantScalars` as
    ``{variant}_{field}`` columns, and max_entropy = log n (uniform attention over n keys)."""
    out: dict[str, float | int | bool] = {}
    for k, h in history.items():
        out.update(variant_scalars(cfg, h).to_dict(k))
    out["max_entropy"] = math.log(cfg.n)  # uniform attention over n keys
    return out
