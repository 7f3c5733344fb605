"""Full-batch L-BFGS for M stacked models: ``torch.optim.LBFGS`` run on each model.

The logic paper (logic-in-self-attention, experiments) trains with L-BFGS, batch
1000 (the whole data set), 50 iterations, MSE. L-BFGS (Nocedal 1980; Nocedal &
Wright, Numerical Optimization, Alg. 7.4-7.5) keeps the last m pairs
s_k = x_{k+1} - x_k, y_k = g_{k+1} - g_k and steps along -H_k g_k, where H_k is the
two-loop recursion's approximation of the inverse Hessian, with a strong-Wolfe
line search. Its line search takes a data-dependent number of function
evaluations per model, so the models cannot share one vmapped step; each runs its
own ``torch.optim.LBFGS``; they advance in lockstep (one step of each active model
per step) so evaluation and early stopping see all M models at once, exactly as in
``train_batched`` with Adam, and the result has the same interface.

One "step" is one ``optimizer.step(closure)`` call, which makes up to
``lbfgs_max_iter`` iterations (torch's ``max_iter``); with ``lbfgs_max_iter=1``
a step is one L-BFGS iteration.
"""

from __future__ import annotations

from typing import Any, Callable

import functools
import time

import torch
from torch import Tensor

from attnlab.runs.threads import num_threads
from attnlab.training.settings import TrainConfig, TrainResult, train_result

Params = dict[str, Tensor]


def _eval(loss_fn: Callable[..., Tensor], metrics_fn: Callable[..., dict[str, Tensor]] | None, params: Params, data: Any) -> dict[str, Tensor]:
    with torch.no_grad():
        metrics = {k: v.detach().reshape(()) for k, v in metrics_fn(params, *data).items()}
        if "loss" not in metrics:
            metrics["loss"] = loss_fn(params, *data).detach().reshape(())
    return metrics


def max_evaluations(max_iter: int) -> int:
    """The loss evaluations one torch.optim.LBFGS step may make with ``max_iter`` iterations:
    max(5 max_iter // 4, max_iter + 25). Torch's default, 5 max_iter // 4, is 1 at max_iter = 1,
    which leaves the strong-Wolfe search no evaluation to spend: every step would be a no-op."""
    return max(max_iter * 5 // 4, max_iter + 25)


class _OneModel:
    """Model m's parameters (unstacked leaves), data and torch.optim.LBFGS."""

    def __init__(self, loss_fn, params: Params, data, cfg: TrainConfig):
        self.loss_fn, self.data = loss_fn, data
        self.theta = {k: p.clone().requires_grad_(True) for k, p in params.items()}
        self.opt = torch.optim.LBFGS(
            list(self.theta.values()), lr=cfg.lr, max_iter=cfg.lbfgs_max_iter,
            max_eval=max_evaluations(cfg.lbfgs_max_iter),
            history_size=cfg.lbfgs_history, line_search_fn=cfg.lbfgs_line_search,
            tolerance_grad=cfg.lbfgs_tolerance_grad, tolerance_change=cfg.lbfgs_tolerance_change,
        )

    def closure(self) -> Tensor:
        self.opt.zero_grad()
        loss = self.loss_fn(self.theta, *self.data)
        loss.backward()
        return loss

    def step(self) -> None:
        self.opt.step(self.closure)

    def params(self) -> Params:
        return {k: p.detach() for k, p in self.theta.items()}


def lbfgs_train_each(loss_fn, params: Params, data, shared, cfg: TrainConfig,
                     metrics_fn, stop_when) -> TrainResult:
    """All M models in lockstep: each step, one ``LBFGS.step`` per active model; every
    ``eval_every`` steps, metrics of all models (M,) and the stop rule, as in Adam."""
    M = next(iter(params.values())).shape[0]
    models = [
        _OneModel(loss_fn, {k: p[m] for k, p in params.items()},
                  tuple(x if sh else x[m] for x, sh in zip(data, shared)), cfg)
        for m in range(M)
    ]
    active = [True] * M
    steps_to_stop = torch.full((M,), -1, dtype=torch.int64)
    eval_steps: list[int] = []
    records: list[dict[str, Tensor]] = []
    for s in range(cfg.steps):
        for m in range(M):
            if active[m]:
                models[m].step()
        if (s + 1) % cfg.eval_every == 0 or s + 1 == cfg.steps:
            per_model = [_eval(loss_fn, metrics_fn, mod.params(), mod.data) for mod in models]
            metrics = {k: torch.stack([r[k] for r in per_model]) for k in per_model[0]}
            eval_steps.append(s + 1)
            records.append(metrics)
            if stop_when is not None:
                newly = torch.as_tensor(stop_when(metrics)).reshape(M).bool().cpu()
                for m in range(M):
                    if newly[m] and active[m]:
                        active[m], steps_to_stop[m] = False, s + 1
                if not any(active):
                    break
    stacked = {k: torch.stack([mod.params()[k] for mod in models]) for k in params}
    return train_result(stacked, eval_steps, records, steps_to_stop)


@functools.cache
def iteration_overhead_seconds(n_params: int, history: int = 100, iterations: int = 130) -> float:
    """Seconds torch.optim.LBFGS spends per iteration outside the closure, for ``n_params`` parameters and
    ``history`` stored pairs, on one thread: the two-loop recursion (about 4 ``history`` vector operations
    of length P) and the strong-Wolfe bookkeeping. Measured once per size and cached: ``iterations``
    iterations (past the point where the history is full) on the chained Rosenbrock function
    sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 from x = 0, which does not converge in so few, with the
    closure's own time subtracted. For estimates (:class:`attnlab.estimates.Estimate`'s ``timed``)."""
    with num_threads(1):
        x = torch.zeros(max(int(n_params), 2), requires_grad=True)
        opt = torch.optim.LBFGS([x], max_iter=iterations, max_eval=10 * iterations, history_size=history,
                                line_search_fn="strong_wolfe", tolerance_grad=0.0, tolerance_change=0.0)
        inside = 0.0

        def closure():
            nonlocal inside
            t = time.perf_counter()
            opt.zero_grad()
            f = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
            f.backward()
            inside += time.perf_counter() - t
            return f

        t = time.perf_counter()
        opt.step(closure)
        total = time.perf_counter() - t
        done = max(1, int(opt.state[x]["n_iter"]))
        return max(total - inside, 0.0) / done
