"""Train M small models at once: one vmapped gradient per step for all of them.

Every model m = 1..M has its own parameters theta_m (stacked: each tensor of
``params`` has a leading axis M), its own data (a leading axis M on a data tensor)
or data shared by all, optional per-model tensors without an example axis
(``model_data``, e.g. one context E per data set), its own minibatch order and its
own stopping step. One
training step is

    B_m    = next minibatch of model m (indices from its own torch.Generator)
    g_m    = grad_theta L(theta_m; B_m)                 for all m at once (vmap)
    theta_m <- optimizer(theta_m, g_m, eta(s))          for all m still active

with ``torch.func.vmap(torch.func.grad_and_value(loss_fn))`` over the model axis.
The models never interact, so the result equals training each one alone with the
same seed and data (tests/training/test_batched.py: float64 to 1e-12).

Minibatch order: model m draws ``torch.randperm(N, generator=G_m)`` at the start of
each epoch, with ``G_m = torch.Generator().manual_seed(seeds[m])``, and takes
consecutive slices of ``batch_size``; a last incomplete slice is dropped (so all
batches share one shape). ``batch_size=None`` or N means full batch, no shuffling.
The (M, batch_size) indices gather every model's minibatch with one
``index_select`` into buffers reused from step to step, before the vmapped call.

Early stopping: every ``eval_every`` updates (and after the last), ``metrics_fn``
runs on each model's full data; ``stop_when(metrics) -> (M,) bool`` marks models
done; those keep their parameters exactly from then on (``active`` mask in the
optimizer) and ``steps_to_stop`` records how many updates they made.

``loss_fn(params, *batch) -> scalar`` sees one model's (unstacked) parameters;
``module_loss`` builds one from an ``nn.Module`` with ``torch.func.functional_call``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import torch
from torch import Tensor
from torch.func import functional_call, grad_and_value, vmap

from attnlab.errors import ConfigError
from attnlab.training.optim import adam_init, adam_update
from attnlab.training.settings import (  # noqa: F401  (TrainConfig and TrainResult are part of this API)
    DEFAULT_LR,
    DEFAULT_WEIGHT_DECAY,
    OPTIMIZERS,
    TrainConfig,
    TrainResult,
    train_result,
)

Params = dict[str, Tensor]
LossFn = Callable[..., Tensor]
MetricsFn = Callable[..., dict[str, Tensor]]
StopRule = Callable[[dict[str, Tensor]], Tensor]
Schedule = Union[float, Callable[[int], float]]

def module_loss(module: torch.nn.Module, criterion: Callable[[Tensor, Tensor], Tensor]) -> LossFn:
    """loss_fn(params, x, y) = criterion(module with params (x), y), via functional_call.

    Stack the parameters of M copies with ``torch.func.stack_module_state``.
    """

    def loss_fn(params: Params, x: Tensor, y: Tensor) -> Tensor:
        return criterion(functional_call(module, params, (x,)), y)

    return loss_fn


# --------------------------------------------------------------------------------------
# input checks and minibatches
# --------------------------------------------------------------------------------------
def _check_inputs(params: Params, data: Sequence[Tensor], shared: tuple[bool, ...],
                  batch_size: int | None) -> tuple[int, int]:
    """Return (M, N) or raise a ConfigError naming the offending argument."""
    if not params:
        raise ConfigError("params is empty: pass a dict name -> stacked tensor (M, ...)")
    sizes = {p.shape[0] if p.ndim else 0 for p in params.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise ConfigError(f"every parameter needs the same leading model axis M, got {sorted(sizes)}")
    (M,) = sizes
    if not data:
        raise ConfigError("data is empty: pass a tuple of tensors (inputs..., targets)")
    Ns = set()
    for i, (x, sh) in enumerate(zip(data, shared)):
        if not sh and (x.ndim < 2 or x.shape[0] != M):
            raise ConfigError(
                f"data[{i}] has shape {tuple(x.shape)}: per-model data needs shape (M={M}, N, ...); "
                "pass shared_data=True for data common to all models"
            )
        Ns.add(x.shape[0] if sh else x.shape[1])
    if len(Ns) != 1:
        raise ConfigError(f"data tensors disagree on the number of examples N: {sorted(Ns)}")
    (N,) = Ns
    if batch_size is not None and batch_size > N:
        raise ConfigError(f"batch_size={batch_size} exceeds the dataset size N={N}: use batch_size <= {N}")
    return M, N


class MinibatchSampler:
    """Per-model epoch permutations from per-model generators (module docstring)."""

    def __init__(self, seeds: Sequence[int], N: int, batch_size: int, device: torch.device):
        self.generators = [torch.Generator().manual_seed(int(s)) for s in seeds]
        self.N, self.B, self.device = N, batch_size, device
        self.per_epoch = N // batch_size
        self.position = self.per_epoch  # forces a fresh permutation on the first call
        self.perms: Tensor | None = None

    def next(self) -> Tensor:
        """Indices of the next minibatch of every model: (M, batch_size) int64."""
        if self.position == self.per_epoch:
            perms = [torch.randperm(self.N, generator=g) for g in self.generators]
            self.perms = torch.stack(perms).to(self.device)  # (M, N)
            self.position = 0
        i = self.position * self.B
        self.position += 1
        return self.perms[:, i : i + self.B]


class _Gather:
    """Minibatch of every model, each tensor (M, B, ...) from indices (M, B).

    Writes into buffers allocated once: a fresh (M, B, ...) tensor per step costs
    page faults comparable to the step's arithmetic for stacks of this size.
    """

    def __init__(self, data: Sequence[Tensor], shared: tuple[bool, ...], M: int, B: int):
        self.flat = [x if sh else x.reshape(M * x.shape[1], *x.shape[2:])  # (M N, ...)
                     for x, sh in zip(data, shared)]
        self.shared = shared
        self.out = [torch.empty((M, B, *x.shape[1:]), dtype=x.dtype, device=x.device)
                    for x in self.flat]
        per_model = [x for x, sh in zip(data, shared) if not sh]
        # row of example i of model m in the flattened (M N, ...) tensors: m N + i
        self.offsets = (torch.arange(M, device=per_model[0].device)[:, None] * per_model[0].shape[1]
                        if per_model else None)  # (M, 1)

    def __call__(self, idx: Tensor) -> tuple[Tensor, ...]:
        flat_idx = None if self.offsets is None else (idx + self.offsets).reshape(-1)  # (M B,)
        for x, sh, out in zip(self.flat, self.shared, self.out):
            rows = idx.reshape(-1) if sh else flat_idx
            torch.index_select(x, 0, rows, out=out.view(-1, *out.shape[2:]))
        return tuple(self.out)


# --------------------------------------------------------------------------------------
# the trainer
# --------------------------------------------------------------------------------------
def train_batched(
    loss_fn: LossFn,
    params: Params,
    data: Sequence[Tensor],
    cfg: TrainConfig | None = None,
    *,
    seeds: Sequence[int] | None = None,
    shared_data: bool | Sequence[bool] = False,
    model_data: Sequence[Tensor] = (),
    metrics_fn: MetricsFn | None = None,
    stop_when: StopRule | None = None,
    **settings,
) -> TrainResult:
    """Train the M stacked models in ``params`` on ``data`` (module docstring).

    Give either ``cfg`` or its fields as keywords (``steps=..., batch_size=...``).
    seeds: one integer per model, needed for minibatches.  shared_data: one flag
    for all data tensors or one per tensor.  model_data: per-model tensors (M, ...)
    without an example axis (e.g. the memorization paper's shared context E of each
    model's data set), passed whole, before the minibatch: loss_fn(params,
    *model_data, *batch).  metrics_fn(params, *model_data, *data) -> dict of
    scalars (default: {"loss": loss_fn(params, *model_data, *data)}).  stop_when(metrics with
    (M,) values) -> (M,) bool.
    """
    if cfg is None:
        cfg = TrainConfig(**settings)
    elif settings:
        raise ConfigError(f"pass either cfg or keyword settings, not both (got {sorted(settings)})")
    data = tuple(data)
    shared = (shared_data,) * len(data) if isinstance(shared_data, bool) else tuple(shared_data)
    if len(shared) != len(data):
        raise ConfigError(f"shared_data has {len(shared)} flags for {len(data)} data tensors")
    M, N = _check_inputs(params, data, shared, cfg.batch_size)
    model_data = tuple(model_data)
    for i, x in enumerate(model_data):
        if x.ndim < 1 or x.shape[0] != M:
            raise ConfigError(f"model_data[{i}] has shape {tuple(x.shape)}: it needs a leading axis M={M}")
    full_batch = cfg.batch_size is None or cfg.batch_size == N
    if not full_batch and (seeds is None or len(seeds) != M):
        raise ConfigError(f"minibatch training needs seeds: one integer per model ({M}), got {seeds!r}")
    device = torch.device(cfg.device)
    params = {k: p.detach().to(device).clone() for k, p in params.items()}  # updated in place
    data = tuple(x.to(device) for x in data)
    model_data = tuple(x.to(device) for x in model_data)
    metrics_fn = metrics_fn or (lambda p, *d: {"loss": loss_fn(p, *d)})
    if cfg.optimizer == "lbfgs":
        from attnlab.training.lbfgs import lbfgs_train_each

        # model_data first, as per-model data: loss_fn(params, *model_data, *data)
        return lbfgs_train_each(loss_fn, params, model_data + data,
                                (False,) * len(model_data) + shared, cfg, metrics_fn, stop_when)
    return _train_adam(loss_fn, params, data, shared, model_data, cfg, metrics_fn, stop_when,
                       None if full_batch else seeds, M, N)


def _train_adam(loss_fn: LossFn, params: Params, data: Sequence[Tensor], shared: tuple[bool, ...], model_data: Any, cfg: TrainConfig, metrics_fn: Any, stop_when: Any,
                seeds: Any, M: int, N: int) -> TrainResult:
    fixed = (0,) * len(model_data)
    data_dims = (*fixed, *(None if sh else 0 for sh in shared))
    batch_dims = data_dims if seeds is None else (*fixed, *(0,) * len(data))
    grad_fn = vmap(grad_and_value(loss_fn), in_dims=(0, *batch_dims))
    if cfg.compile:
        grad_fn = torch.compile(grad_fn)
    eval_fn = vmap(metrics_fn, in_dims=(0, *data_dims))
    device = next(iter(params.values())).device
    sampler = None if seeds is None else MinibatchSampler(seeds, N, cfg.batch_size, device)
    gather = None if seeds is None else _Gather(data, shared, M, cfg.batch_size)
    state = adam_init(params)
    active = torch.ones(M, dtype=torch.bool, device=device)
    steps_to_stop = torch.full((M,), -1, dtype=torch.int64)
    eval_steps: list[int] = []
    records: list[dict[str, Tensor]] = []
    for s in range(cfg.steps):
        batch = data if sampler is None else gather(sampler.next())
        grads, _ = grad_fn(params, *model_data, *batch)
        params, state = adam_update(
            params, grads, state, cfg.rate(s), betas=cfg.betas, eps=cfg.eps,
            weight_decay=cfg.weight_decay, decoupled=cfg.optimizer == "adamw",
            active=None if stop_when is None else active, inplace=True,
        )
        if (s + 1) % cfg.eval_every == 0 or s + 1 == cfg.steps:
            with torch.no_grad():
                all_data = (*model_data, *data)
                metrics = {k: v.detach() for k, v in eval_fn(params, *all_data).items()}
                if "loss" not in metrics:
                    metrics["loss"] = vmap(loss_fn, in_dims=(0, *data_dims))(params, *all_data).detach()
            eval_steps.append(s + 1)
            records.append(metrics)
            if stop_when is not None:
                newly = torch.as_tensor(stop_when(metrics), device=device).bool() & active
                steps_to_stop[newly.cpu()] = s + 1
                active = active & ~newly
                if not active.any():
                    break
    return train_result(params, eval_steps, records, steps_to_stop)
