"""The models §4.1 trains, and the task each one learns: members (system or flavour, seed, extra-loss weights,
learning rate) and one task per seed index.

The text (§4.1) trains three restricted systems and the combined system in four flavours (``lean-1``,
``lean-2``, ``lean-3``: an extra loss lambda P_s leaning toward solution s, :mod:`~attnlab.papers.logic.penalties`;
``free``: the MSE alone). Every system and flavour of one seed index i starts from the same task: q_true
with N(0, 1) entries, ``batch`` training and ``test_batch`` fresh sequences of i.i.d. uniform categories,
all drawn from the rng ``(seed, i)``, and Y_i = q_true(X_{i-1}, X_i) with Y_1 = 0
(:func:`~attnlab.papers.logic.encoding.targets`). A sensitivity sweep adds the lean flavours at other
lambdas and all four flavours at other learning rates, over the first ``sweep_seeds`` seed indices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from attnlab.papers.logic.encoding import random_sequences, targets
from attnlab.papers.logic.model import masks

FLAVOURS = ("lean-1", "lean-2", "lean-3", "free")
SYSTEMS = ("system 1", "system 2", "system 3")


class MemberSettings(Protocol):
    """What :func:`members`, :func:`task` and :func:`member_masks` read of a config: the problem's size
    (N categories, M positions, ``batch`` training and ``test_batch`` fresh sequences), the seed and the
    seed indices of the main runs and of the sweep, the sweep's lambdas and learning rates, the main
    lambda and learning rate, and system 2's B mask ("full" or "diagonal")."""

    N: int
    M: int
    batch: int
    test_batch: int
    seed: int
    seeds: int
    sweep_seeds: int
    sweep_weights: tuple[float, ...]
    sweep_lrs: tuple[float, ...]
    extra_weight: float
    lr: float
    system2_B: str


@dataclass(frozen=True)
class Member:
    """One trained model: its group ("main", "lambda=...", "lr=..."), system or flavour, seed index."""

    group: str
    name: str
    seed_index: int
    lam: tuple[float, float, float]
    lr: float


def _lams(name: str, lam: float) -> tuple[float, float, float]:
    """(lambda_1, lambda_2, lambda_3): ``lam`` on the extra loss of flavour ``lean-s``, 0 elsewhere."""
    return tuple(lam if name == f"lean-{s}" else 0.0 for s in (1, 2, 3))  # type: ignore[return-value]


def members(cfg: MemberSettings) -> list[Member]:
    """Every model of the run, main runs first: per seed index the three systems, then the four flavours at
    lambda = ``extra_weight``; then, per sweep seed index, the lean flavours at each lambda of
    ``sweep_weights`` and the four flavours at each lr of ``sweep_lrs``."""
    out = []
    lam0 = cfg.extra_weight
    for i in range(cfg.seeds):
        for s in SYSTEMS:
            out.append(Member("main", s, i, (0.0, 0.0, 0.0), cfg.lr))
        for f in FLAVOURS:
            out.append(Member("main", f, i, _lams(f, lam0), cfg.lr))
    for i in range(cfg.sweep_seeds):
        for lam in cfg.sweep_weights:
            for f in FLAVOURS[:3]:
                out.append(Member(f"lambda={lam:g}", f, i, _lams(f, lam), cfg.lr))
        for lr in cfg.sweep_lrs:
            for f in FLAVOURS:
                out.append(Member(f"lr={lr:g}", f, i, _lams(f, lam0), lr))
    return out


@dataclass(frozen=True)
class Task:
    """One seed index's problem: Y_i = q_true(X_{i-1}, X_i) (Y_1 = 0) on random sequences.

    Attributes:
        q_true: (N, N) N(0, 1) entries.
        tokens, Y: the training sequences (batch, M) of category indices and their targets (batch, M).
        test, Y_test: fresh sequences (test_batch, M) and their targets, for the ablations.
    """

    q_true: np.ndarray
    tokens: np.ndarray
    Y: np.ndarray
    test: np.ndarray
    Y_test: np.ndarray


def task(cfg: MemberSettings, i: int) -> Task:
    """Seed index i's q_true (N x N), training and test sequences and targets (rng ``(seed, i)``)."""
    rng = np.random.default_rng([cfg.seed, i])
    q_true = rng.standard_normal((cfg.N, cfg.N))
    tok = random_sequences(cfg.N, cfg.M, cfg.batch, rng)
    test = random_sequences(cfg.N, cfg.M, cfg.test_batch, rng)
    return Task(q_true, tok, targets(tok, q_true), test, targets(test, q_true))


def system_of(name: str) -> str:
    """The access pattern of a member's name for :func:`~attnlab.papers.logic.model.masks`: "system s" -> "s",
    a flavour -> "combined"."""
    return name.split()[-1] if name.startswith("system") else "combined"


def member_masks(cfg: MemberSettings, name: str, *, dtype: torch.dtype = torch.float64,
                 device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """The masks of the system or flavour ``name`` (:func:`attnlab.papers.logic.model.masks`), system 2's B as
    ``cfg.system2_B`` says."""
    system = system_of(name)
    return masks(system, cfg.N, cfg.M, B=cfg.system2_B if system == "2" else None, dtype=dtype, device=device)
