"""§4.1's training: every member (:mod:`~attnlab.papers.logic.members`) fitted alone by full-batch L-BFGS,
and what one loss-and-gradient evaluation costs.

Member m minimises, over its unmasked weights theta (:mod:`~attnlab.papers.logic.model`),

    L(theta) = MSE(theta) + sum_s lambda_s P_s(theta)

with MSE the mean over all S x M outputs of the training set (Y_1 = 0 included; computed over chunks of
about 2500 token rows, :func:`~attnlab.papers.logic.model.chunked_mse`) and P_s the extra losses of the
lean flavours (:func:`~attnlab.papers.logic.penalties.penalties`; lambda = 0 for the systems and the free
flavour). The optimiser is torch.optim.LBFGS through :func:`attnlab.training.train_batched`: ``iterations``
steps of ``inner_iterations`` iterations each, strong-Wolfe line search, learning rate ``lr``; the
initialisation is :func:`~attnlab.papers.logic.model.init_params` with seed ``seed * 1000 + i`` for seed
index i, so every system and flavour of one seed starts from the same weights.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from attnlab.papers.logic.encoding import random_sequences, targets
from attnlab.papers.logic.members import FLAVOURS, SYSTEMS, Member, MemberSettings, Task, member_masks, members, \
    system_of, task
from attnlab.papers.logic.model import CHUNK_ROWS, chunked_mse, effective, init_params, masks
from attnlab.papers.logic.penalties import penalties
from attnlab.runs.progress import Steps
from attnlab.runs.rundir import RunDir, log_metric
from attnlab.runs.threads import num_threads
from attnlab.training import train_batched
from attnlab.training.processes import map_processes
from attnlab.training.settings import TrainConfig

DTYPES = {"float32": torch.float32, "float64": torch.float64}

EVALUATIONS_PER_ITERATION = 1.05
"""L-BFGS loss-and-gradient evaluations per iteration with the strong-Wolfe search (measured: the median model
made 1000 iterations and 1052 evaluations at N = 5, M = 12, batch 100)"""


class TrainSettings(MemberSettings, Protocol):
    """What the training reads of a config besides the members' settings: the training precision
    ("float32" or "float64") and device, the normalisation ("layernorm" or "none"), the L-BFGS steps and the
    iterations per step, and the worker processes (0: one per core)."""

    dtype: str
    device: str | torch.device
    norm: str
    iterations: int
    inner_iterations: int
    workers: int


def evaluation_seconds(cfg: TrainSettings) -> float:
    """Seconds of one loss-and-gradient evaluation of one model on ``cfg.batch`` sequences, on one thread:
    one chunk of sequences timed (best of 3 after a warm-up), times the chunks of the batch."""
    per = min(cfg.batch, -(-CHUNK_ROWS // cfg.M))
    return _chunk_seconds(cfg.N, cfg.M, per, cfg.dtype, cfg.norm, str(cfg.device)) * cfg.batch / per


@functools.cache
def _chunk_seconds(N: int, M: int, sequences: int, dtype: str, norm: str, device: str) -> float:
    """Best of 3 timings of one loss-and-gradient evaluation of the combined model on ``sequences`` random
    sequences (after a warm-up), on one thread on the CPU."""
    dt = DTYPES[dtype]
    rng = np.random.default_rng(0)
    tok = random_sequences(N, M, sequences, rng)
    tokens = torch.as_tensor(tok, device=device)
    Y = torch.as_tensor(targets(tok, rng.standard_normal((N, N))), dtype=dt, device=device)
    p = {k: v.requires_grad_(True) for k, v in init_params(N, M, torch.Generator().manual_seed(0), dtype=dt,
                                                              device=device).items()}
    mk = masks("combined", N, M, dtype=dt, device=device)

    def evaluation() -> None:
        for v in p.values():
            v.grad = None
        chunked_mse(effective(p, mk), tokens, Y, N, norm=norm).backward()
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    with num_threads(1 if device == "cpu" else None):
        evaluation()
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            evaluation()
            best = min(best, time.perf_counter() - t)
    return best


def train_all(cfg: TrainSettings, mem: list[Member], tasks: list[Task]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Train every member; (final parameters (stacked), mse history (iters, models)).

    Each model has its own L-BFGS and nothing couples two models, so they train one at a time, each on
    one intra-op thread (the models are small: a second thread mostly waits, measured 1.5-80x slower at
    N = 3..10 on 2 shared cores, and one thread makes a model's trajectory the same in every process),
    on the CPU in ``workers`` processes side by side (:func:`attnlab.training.processes.map_processes`).
    The result is the same bit for bit for any number of workers (tests). Progress: one line per model
    trained, with an ETA (:class:`attnlab.runs.progress.Steps`)."""
    steps = Steps("models trained", len(mem))
    jobs = [(cfg, m, tasks[m.seed_index]) for m in mem]
    if str(cfg.device) == "cpu":
        done = map_processes(_train_member, jobs, cfg.workers, on_done=lambda k, n: steps.advance(k))
    else:
        done = []
        for job in jobs:
            done.append(_train_member(job))
            steps.advance()
    params = {k: torch.stack([p[k] for p, _ in done]) for k in done[0][0]}
    return params, torch.stack([h for _, h in done], dim=1)


def _train_member(job: tuple[TrainSettings, Member, Task]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """One member trained on its task: (final parameters, on the CPU; mse after each step (iterations,),
    float64). A model stopped by L-BFGS's tolerances keeps its loss for the steps left."""
    cfg, m, tk = job
    dt, dev = DTYPES[cfg.dtype], cfg.device
    N, M = cfg.N, cfg.M
    init = init_params(N, M, torch.Generator().manual_seed(cfg.seed * 1000 + m.seed_index), dtype=dt, device=dev)
    mk = member_masks(cfg, m.name, dtype=dt, device=dev)
    lam = torch.tensor(m.lam, dtype=dt, device=dev)
    penalised = bool((lam != 0).any())
    tokens = torch.as_tensor(tk.tokens, device=dev)
    Y = torch.as_tensor(tk.Y, dtype=dt, device=dev)

    def parts(p: dict[str, torch.Tensor], tok: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        e = effective(p, mk)
        err = chunked_mse(e, tok, y, N, norm=cfg.norm)
        return err, err + (lam * penalties(e, N, M)).sum() if penalised else err

    def loss_fn(p: dict[str, torch.Tensor], *data: torch.Tensor) -> torch.Tensor:
        return parts(p, *data)[1]

    def metrics_fn(p: dict[str, torch.Tensor], *data: torch.Tensor) -> dict[str, torch.Tensor]:
        err, total = parts(p, *data)
        return {"loss": total, "mse": err}

    tc = TrainConfig(steps=cfg.iterations, optimizer="lbfgs", lr=m.lr, lbfgs_max_iter=cfg.inner_iterations,
                     eval_every=1, device=dev)
    res = train_batched(loss_fn, {k: v[None] for k, v in init.items()}, (tokens[None], Y[None]), tc,
                        metrics_fn=metrics_fn)
    h = res.history["mse"][:, 0].to(torch.float64).cpu()
    hist = torch.cat([h, h[-1:].expand(cfg.iterations - h.shape[0])]) if h.shape[0] < cfg.iterations else h
    return {k: v[0].cpu() for k, v in res.params.items()}, hist


@dataclass(frozen=True)
class Trained:
    """Every model of the run after training (:func:`train`).

    Attributes:
        members: the models, main runs first (:func:`~attnlab.papers.logic.members.members`).
        tasks: seed index i -> its :class:`~attnlab.papers.logic.members.Task`.
        params: the final parameters, stacked over the members (name -> (models, ...)).
        log10_mse: (iterations, models) log10 of the training MSE after each L-BFGS step.
        main: model name (system or flavour) -> the indices of its main-run members, by seed.
        seconds: wall time of the tasks and the training.
        system2_B: system 2's B mask ("full" or "diagonal", the config's ``system2_B``).
    """

    members: list[Member]
    tasks: list[Task]
    params: dict[str, torch.Tensor]
    log10_mse: np.ndarray
    main: dict[str, list[int]]
    seconds: float
    system2_B: str = "full"

    @property
    def final(self) -> list[float]:
        """Each member's log10 MSE after the last step."""
        return [float(x) for x in self.log10_mse[-1]]

    def effective(self, j: int, N: int, M: int) -> dict[str, torch.Tensor]:
        """Member j's effective weights (masked by its system) in float64 on the CPU."""
        p = {k: v[j].detach().to(torch.float64).cpu() for k, v in self.params.items()}
        system = system_of(self.members[j].name)
        return effective(p, masks(system, N, M, B=self.system2_B if system == "2" else None))


def train(cfg: TrainSettings, experiment_id: str, run_dir: RunDir | None = None) -> Trained:
    """Every member of :func:`~attnlab.papers.logic.members.members` trained on its seed's task
    (:func:`train_all`); each final loss logged to the run's metrics under ``experiment_id``."""
    t0 = time.perf_counter()
    mem = members(cfg)
    tasks = [task(cfg, i) for i in range(max(cfg.seeds, cfg.sweep_seeds))]
    params, hist = train_all(cfg, mem, tasks)
    seconds = time.perf_counter() - t0
    logmse = np.log10(np.maximum(hist.numpy(), 1e-300))  # (iters, models)
    for j, m in enumerate(mem):
        log_metric(run_dir, {"experiment": experiment_id, "group": m.group, "model": m.name, "seed_index": m.seed_index,
                             "final_log10_mse": float(logmse[-1, j])})
    main = {name: [j for j, m in enumerate(mem) if m.group == "main" and m.name == name] for name in SYSTEMS + FLAVOURS}
    return Trained(mem, tasks, params, logmse, main, seconds, cfg.system2_B)
