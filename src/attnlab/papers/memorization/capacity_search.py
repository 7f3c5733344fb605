"""The largest data set gradient descent memorizes: a fast trainer and a bracketing search.

memorization-capacity-of-mha §5.2 and Appendix H. Setting: one context E (n x d)
shared by all T examples, queries e^(t) iid U(0, 1)^d, labels y^(t) uniform on
[n_classes] (:func:`attnlab.papers.memorization.data.draw_nested_dataset`); the model
is eqs. (1)-(6) of :mod:`attnlab.papers.memorization.model`, with its symbols and
shapes. Memorized means every one of the T labels is the argmax of y_hat^(t).

Fast forward/backward. With a shared context the keys and values of head h are the
same for every example, so the query and output sides fold into two small matrices
per step (computed once, for all T examples):

    A_h = W_Q,h K_h^T = W_Q,h W_K,h^T E^T            (d x n)       K_h = E W_K,h
    N_h = V_h W_O,h W_D                              (n x C)       V_h = E W_V,h

(W_O,h: the h-th block of d_v rows of W_O, C = n_classes). Then, per example,

    alpha_h = A_h^T e            eq. (1), as a row of  alpha = e [A_1, ..., A_H]   (T x H n)
    theta_h = Softmax(alpha_h)   eq. (2)
    y_hat   = sum_h N_h^T theta_h  eqs. (3)-(6)  =  [theta_1; ...; theta_H]^T [N_1; ...; N_H]

so a forward pass costs 2 T H n (d + C) FLOPs instead of the unfolded order's
T (2 d H d_h + 2 H d_h n + 2 H n d_v + 2 H d_v d + 2 d C) (d = d_h = d_v = 64, n = 32,
C = 100, H = 8: 84k against 209k per example, 2.5x fewer), plus O(H d n (d_h + d_v + C))
per step for the folding, independent of T.
The backward pass is written out (``loss_and_grads``): the gradients of the
cross-entropy reach A and N through two GEMMs over the examples and then the weights
through small products (chain rule through the two definitions above). It equals
autograd through attention_classifier (tests/papers/memorization/test_capacity_search.py:
float64, 1e-10 relative). The parameters, and so the optimisation path, are the
paper's W_K, W_Q, W_V, W_O, W_D: only the order of the products changes.

Several candidate T train at once: M models stacked on a leading axis, model m
sees the first T_m rows of one draw (nested data: the data set of size T is the
prefix of the one of size T' > T) with a loss mask, and leaves the stack as soon as
its training accuracy reaches 100% (checked on every step's forward pass, before the
update, so the stopped parameters are exactly the memorizing ones).

The authors' model (``model="authors"``; :mod:`attnlab.papers.memorization.authors_model`:
linear embedding, sinusoidal positions, one attention layer read at the query token, as
released with d_v = 1 and the query's own key masked, ``d_v=1, keys="context"``) trains in the
same loop; the queries and context are then raw inputs, embedded by the model. With the query's
key masked its context side folds the same way, the embedding included
(:mod:`attnlab.papers.memorization.authors_folded`, backward written out: 35k FLOPs per example
at H = 8, d_v = 1 against 191k unfolded); with ``keys="all"`` (the query also attends to itself)
the gradients come from autograd through a vmap of ``authors_model`` over the M models
(``autograd_loss_and_grads``).

Search (``search_capacity``): bracket upwards from T_start by a factor between 1 +
(growth - 1) / 10 and ``growth``, smaller the closer the last success came to the step
budget (``_adaptive_growth``), until a failure, then cut the bracket [largest success, smallest failure] into
``candidates + 1`` parts per round until it is at most max(1, resolution x lo) wide. Every
attempt uses the same initialisation (seeded) and the same draw. An attempt that ends
far below 100% (cfg.diverged_below) diverged, a learning-rate failure rather than a
capacity one, and is retried once at half the peak rate. Every failure is a failure within
cfg.max_steps updates, so the search bounds the largest T gradient descent memorizes from
below: ``SearchResult.capacity`` is ``Bound.at_least(largest_success)``, printed ">= T".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from attnlab.checks import Bound
from attnlab.config import Config, check_choice, check_device, check_int, check_number, check_seed, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.papers.memorization.authors_folded import authors_loss_and_grads
from attnlab.papers.memorization.authors_model import KEYS, authors_attention, authors_model, init_authors_model
from attnlab.papers.memorization.data import draw_nested_dataset
from attnlab.papers.memorization.losses import masked_cross_entropy
from attnlab.papers.memorization.model import (
    attention_classifier,
    init_attention_classifier,
    theorem1_bound,
    training_bytes,
)
from attnlab.training.optim import AdamState, adam_init, adam_update
from attnlab.training.schedules import WarmupCosine

Params = dict[str, Tensor]
MODELS = ("plain", "authors")


# --------------------------------------------------------------------------------------
# the folded forward/backward
# --------------------------------------------------------------------------------------
def _folded(params: Params, E: Tensor) -> tuple[Tensor, ...]:
    """K, V (M, H, n, d_h|d_v); A = [A_1..A_H] (M, d, H n); U = W_O W_D (M, H, d_v, C); N (M, H n, C)."""
    W_K, W_Q, W_V, W_O, W_D = (params[k] for k in ("W_K", "W_Q", "W_V", "W_O", "W_D"))
    M, H, d, _ = W_Q.shape
    n, d_v, C = E.shape[0], W_V.shape[-1], W_D.shape[-1]
    K = E @ W_K  # (n, d) @ (M, H, d, d_h) -> (M, H, n, d_h)
    V = E @ W_V  # (M, H, n, d_v)
    A = (W_Q @ K.mT).permute(0, 2, 1, 3).reshape(M, d, H * n)  # A_h = W_Q,h K_h^T: (M, H, d, n) -> (M, d, H n)
    U = (W_O @ W_D).view(M, H, d_v, C)  # W_O,h W_D: (M, H d_v, C) -> (M, H, d_v, C)
    N = (V @ U).reshape(M, H * n, C)  # N_h = V_h W_O,h W_D: (M, H, n, C) -> (M, H n, C)
    return K, V, A, U, N


def folded_logits(params: Params, E: Tensor, e: Tensor) -> Tensor:
    """y_hat of eqs. (1)-(6) for M stacked models, shared context E (n, d), queries e (T, d)
    -> (M, T, C); the same numbers as vmap(attention_classifier) (module docstring)."""
    _, _, A, _, N = _folded(params, E)
    M, T, n = A.shape[0], e.shape[0], E.shape[0]
    theta = torch.softmax((e @ A).view(M, T, -1, n), dim=-1)  # eqs. (1)-(2): (M, T, H, n)
    return theta.view(M, T, -1) @ N  # eqs. (3)-(6): (M, T, H n) @ (M, H n, C) -> (M, T, C)


def attention_coefficients(params: Params, E: Tensor, e: Tensor) -> Tensor:
    """theta_h^(t) = Softmax(E W_K,h W_Q,h^T e^(t)) of eqs. (1)-(2) for M stacked models:
    -> (M, T, H, n), each row a distribution over the n context tokens."""
    _, _, A, _, _ = _folded(params, E)
    M, T, n = A.shape[0], e.shape[0], E.shape[0]
    return torch.softmax((e @ A).view(M, T, -1, n), dim=-1)  # (M, T, d) @ (M, d, H n) -> (M, T, H, n)


def loss_and_grads(params: Params, E: Tensor, e: Tensor, y: Tensor, T_m: Tensor
                   ) -> tuple[Tensor, Params, Tensor]:
    """Masked mean cross-entropy of M models and its gradients, backward written out.

    params: stacked (M, ...).  e (T, d), y (T,): the longest prefix needed; model m
    uses rows t < T_m[m] (T_m: (M,) int64).  -> loss (M,), grads like params,
    correct (M,) int64: the labels among its T_m that are argmax of y_hat (before any update).
    """
    W_Q, W_O, W_D = params["W_Q"], params["W_O"], params["W_D"]
    K, V, A, U, N = _folded(params, E)
    M, H, n, d_v, (T, d), C = K.shape[0], K.shape[1], E.shape[0], V.shape[-1], e.shape, N.shape[-1]
    theta = torch.softmax((e @ A).view(M, T, H, n), dim=-1).view(M, T, H * n)  # eqs. (1)-(2)
    logits = theta @ N  # (M, T, C)
    loss, G, correct = masked_cross_entropy(logits, y, T_m)  # G = dL/dy_hat: (M, T, C)
    dN = theta.mT @ G  # (M, H n, T) @ (M, T, C) -> (M, H n, C)
    dtheta = (G @ N.mT).view(M, T, H, n)  # (M, T, H, n)
    th = theta.view(M, T, H, n)
    dalpha = th * (dtheta - (th * dtheta).sum(-1, keepdim=True))  # softmax backward per head
    dA = (e.T @ dalpha.view(M, T, H * n)).view(M, d, H, n).permute(0, 2, 1, 3)  # (M, H, d, n)
    dK = dA.mT @ W_Q  # A_h = W_Q,h K_h^T: (M, H, n, d) @ (M, H, d, d_h) -> (M, H, n, d_h)
    dN = dN.view(M, H, n, C)
    dU = (V.mT @ dN).reshape(M, H * d_v, C)  # N_h = V_h U_h: (M, H, d_v, C) -> (M, H d_v, C)
    grads = {
        "W_K": E.T @ dK,  # K_h = E W_K,h: (d, n) @ (M, H, n, d_h) -> (M, H, d, d_h)
        "W_Q": dA @ K,  # (M, H, d, n) @ (M, H, n, d_h) -> (M, H, d, d_h)
        "W_V": E.T @ (dN @ U.mT),  # dV_h = dN_h U_h^T: (M, H, n, d_v) -> (M, H, d, d_v)
        "W_O": dU @ W_D.mT,  # U = W_O W_D: (M, H d_v, C) @ (M, C, d) -> (M, H d_v, d)
        "W_D": W_O.mT @ dU,  # (M, d, H d_v) @ (M, H d_v, C) -> (M, d, C)
    }
    return loss, grads, correct


def authors_logits(params: Params, E: Tensor, e: Tensor, keys: str) -> Tensor:
    """y_hat of the authors' model (:func:`attnlab.papers.memorization.authors_model.authors_model`:
    linear embedding, sinusoidal positions, one attention layer read at the query) for M stacked
    models, shared raw context E (n, d), raw queries e (T, d) -> (M, T, C)."""
    return torch.func.vmap(lambda p: authors_model(p, E, e, keys=keys))(params)


def authors_coefficients(params: Params, E: Tensor, e: Tensor, keys: str) -> Tensor:
    """theta_h^(t) of the authors' model for M stacked models -> (M, T, H, n) over the context
    tokens (keys="context"), or (M, T, H, n + 1), the query's own key first (keys="all")."""
    return torch.func.vmap(lambda p: authors_attention(p, E, e, keys=keys))(params)


def autograd_loss_and_grads(params: Params, E: Tensor, e: Tensor, y: Tensor, T_m: Tensor, keys: str
                            ) -> tuple[Tensor, Params, Tensor]:
    """:func:`loss_and_grads` for the authors' model, by autograd (the same masked mean
    cross-entropy over the first T_m[m] rows of model m; the same return values)."""
    leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
    logits = authors_logits(leaves, E, e, keys)  # (M, T, C)
    M, T = logits.shape[:2]
    mask = torch.arange(T, device=e.device) < T_m[:, None]
    weight = mask.to(logits.dtype) / T_m[:, None].to(logits.dtype)
    label_logp = torch.log_softmax(logits, dim=-1).gather(-1, y.expand(M, T)[..., None])[..., 0]
    loss = -(label_logp * weight).sum(-1)
    correct = ((logits.detach().argmax(-1) == y) & mask).sum(-1)
    grads = torch.autograd.grad(loss.sum(), list(leaves.values()))  # models are independent: one backward
    return loss.detach(), dict(zip(leaves, grads)), correct


# --------------------------------------------------------------------------------------
# training several candidate T at once
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Attempt:
    """One trained candidate T. outcome: "memorized" (all T labels argmax-correct when it
    stopped, after ``steps`` updates), "budget" (not memorized at cfg.max_steps = ``steps``)
    or "superseded" (stopped after ``steps`` because a larger T of its round was memorized,
    which makes its own outcome irrelevant to the search); the search marks a "budget"
    attempt "diverged" when its final accuracy is below cfg.diverged_below (Adam left the
    basin: a learning-rate failure, not a capacity one) and retries it at half the rate.
    lr: the peak rate it trained with. memorized_at: the first step at
    which all T labels were correct (None: never). seconds: wall time of its round, shared
    by the candidates trained together. accuracy, loss: training accuracy and mean
    cross-entropy when it stopped."""

    T: int
    outcome: str
    steps: int
    seconds: float
    accuracy: float
    loss: float
    memorized_at: int | None = None
    lr: float | None = None

    @property
    def memorized(self) -> bool:
        return self.outcome == "memorized"


@dataclass(frozen=True)
class CandidateRun:
    """attempts in the order of Ts; params: final weights, stacked (M, ...) in that order;
    params_at_memorization: the weights at each model's first memorizing step (the init
    for a model that never memorized)."""

    attempts: list[Attempt]
    params: Params
    params_at_memorization: Params


def _select(x: dict[str, Tensor], keep: Tensor) -> dict[str, Tensor]:
    return {k: v[keep].contiguous() for k, v in x.items()}


def init_model(cfg: SearchConfig) -> Params:
    """One model (stacked, M = 1) of cfg.model, initialised from cfg.seed: the plain eqs. (1)-(6)
    (:func:`init_attention_classifier`) or the authors' (:func:`init_authors_model`, d_in = d)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    if cfg.model == "authors":
        return init_authors_model(1, cfg.d, cfg.d, cfg.n, cfg.H, cfg.d_h, cfg.n_classes, gen, d_v=cfg.d_v,
                                  dtype=cfg.dtype, device=cfg.device)
    return init_attention_classifier(1, cfg.d, cfg.n, cfg.H, cfg.d_h, cfg.n_classes, gen, d_v=cfg.d_v,
                                     dtype=cfg.dtype, device=cfg.device)


def train_candidates(Ts: list[int], E: Tensor, e: Tensor, y: Tensor, cfg: SearchConfig, *,
                     min_steps: int = 0) -> CandidateRun:
    """Train one model per T in ``Ts`` on the first T rows of (e, y), all at once, with
    full-batch Adam (peak cfg.lr, cfg.warmup linear warmup steps, cosine decay over
    cfg.max_steps). A model stops once it is memorized after at least ``min_steps`` updates,
    at cfg.max_steps, or once a larger T of the round stopped memorized."""
    M = len(Ts)
    if not 0 <= min_steps <= cfg.max_steps:
        raise ConfigError(f"min_steps must be in [0, max_steps={cfg.max_steps}], got {min_steps!r}")
    one = init_model(cfg)
    E, e, y = E.to(cfg.device), e.to(cfg.device), y.to(cfg.device)
    params = {k: v.expand(M, *v.shape[1:]).clone() for k, v in one.items()}  # same init for every T
    final = {k: v.clone() for k, v in params.items()}
    at_mem = {k: v.clone() for k, v in params.items()}
    state = adam_init(params)
    schedule = WarmupCosine(cfg.lr, cfg.warmup, cfg.max_steps, cfg.lr * cfg.min_lr_ratio)
    alive = torch.arange(M)  # indices into Ts of the models still training (on the CPU)
    T_alive = torch.tensor(Ts, dtype=torch.int64, device=cfg.device)
    outcome, steps, first = ["budget"] * M, [cfg.max_steps] * M, [None] * M
    accuracy, loss_out = [0.0] * M, [math.inf] * M
    t0 = time.perf_counter()
    for s in range(cfg.max_steps + 1):
        T_max = int(T_alive.max())
        if cfg.model == "authors" and cfg.keys == "context":
            loss, grads, correct = authors_loss_and_grads(params, E, e[:T_max], y[:T_max], T_alive)
        elif cfg.model == "authors":
            loss, grads, correct = autograd_loss_and_grads(params, E, e[:T_max], y[:T_max], T_alive, cfg.keys)
        else:
            loss, grads, correct = loss_and_grads(params, E, e[:T_max], y[:T_max], T_alive)
        hit = correct == T_alive
        for j in torch.nonzero(hit).flatten().tolist():
            m = int(alive[j])
            if first[m] is None:
                first[m] = s
                for k, v in at_mem.items():
                    v[m] = params[k][j]
        done = hit & (s >= min_steps)
        top = int(T_alive[done].max()) if done.any() else 0
        stop = done | (T_alive < top) | (s == cfg.max_steps)
        for j in torch.nonzero(stop).flatten().tolist():
            m = int(alive[j])
            outcome[m] = "memorized" if hit[j] else ("superseded" if T_alive[j] < top else "budget")
            steps[m], accuracy[m], loss_out[m] = s, float(correct[j]) / Ts[m], float(loss[j])
            for k, v in final.items():
                v[m] = params[k][j]
        if stop.all():
            break
        if stop.any():
            keep = ~stop
            params, grads = _select(params, keep), _select(grads, keep)
            state = AdamState(_select(state.m, keep), _select(state.v, keep), state.step[keep])
            alive, T_alive = alive[keep.cpu()], T_alive[keep]
        params, state = adam_update(params, grads, state, schedule(s), inplace=True)
    seconds = time.perf_counter() - t0
    attempts = [Attempt(T, outcome[m], steps[m], seconds, accuracy[m], loss_out[m], first[m], cfg.lr)
                for m, T in enumerate(Ts)]
    return CandidateRun(attempts, final, at_mem)


def memorized_in_float64(params: Params, E: Tensor, e: Tensor, y: Tensor, *, model: str = "plain",
                         keys: str = "context") -> bool:
    """Every label argmax-correct under attention_classifier (the unfolded eqs. (1)-(6)), or
    authors_model for model="authors", in float64.

    params: one model (unstacked)."""
    p64 = {k: v.detach().to(torch.float64) for k, v in params.items()}
    with torch.no_grad():
        if model == "authors":
            logits = authors_model(p64, E.to(torch.float64), e.to(torch.float64), keys=keys)
        else:
            logits = attention_classifier(p64, E.to(torch.float64), e.to(torch.float64))
    return bool((logits.argmax(-1) == y).all())


# --------------------------------------------------------------------------------------
# the search
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchConfig(Config):
    """The search: model and data in paper notation, the trainer, the bracketing rule.

    Memorization is judged on full-batch Adam with linear warmup then cosine decay; the
    search stops once smallest failure - largest success <= max(1, resolution x largest
    success)."""

    H: int = param(4, "number of heads H")
    d: int = param(64, "token dimension d")
    n: int = param(32, "context size n")
    d_h: int | None = param(None, "head size d_h (None: d)")
    d_v: int | None = param(None, "value size d_v per head (None: d_h; the released model: 1)")
    model: str = param("plain", "plain (eqs. (1)-(6) on the raw tokens) or authors (linear embedding + "
                                "sinusoidal positions + attention, read at the query token)")
    keys: str = param("context", "the authors' model's keys: context (the query's own key masked, as "
                                 "released) or all")
    n_classes: int = param(100, "label classes")
    seed: int = param(0, "seed of the data draw and the initialisation")
    max_steps: int = param(1000, "update budget per attempt")
    lr: float = param(1e-2, "Adam's peak learning rate")
    warmup: int = param(100, "linear warmup steps, then cosine decay to lr x min_lr_ratio at max_steps")
    min_lr_ratio: float = param(0.05, "final learning rate as a fraction of lr")
    T_start: int | None = param(None, "first T tried (None: 2 x Theorem 1's bound H (min(n, d_h) - 1) + 1)")
    growth: float = param(2.0, "largest factor between bracketing attempts")
    candidates: int = param(2, "values of T trained together per round")
    resolution: float = param(0.05, "relative width of the final bracket (0: exact)")
    diverged_below: float = param(0.5, "an attempt ending below this training accuracy diverged and is "
                                       "retried once at lr / 2")
    T_limit: int = param(20_000, "never try more than this many examples (the draw's size)")
    dtype: torch.dtype = param(torch.float32, "training dtype: torch.float32 or torch.float64")
    device: str = param("cpu", "'cpu', 'cuda' or 'cuda:N'")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """d_h left None takes d, d_v d_h; T_start left None 2 x Theorem 1's bound, below T_limit
        (H, d, n, d_h and T_limit checked first)."""
        v = super().normal_form(values)
        if v["d_h"] is None:
            v["d_h"] = v["d"]
        if v["d_v"] is None:
            v["d_v"] = v["d_h"]
        if v["T_start"] is None:
            for name, low in (("H", 1), ("d", 1), ("n", 1), ("d_h", 1), ("T_limit", 2)):
                check_int(name, v[name], low)
            v["T_start"] = min(2 * theorem1_bound(v["H"], v["n"], v["d_h"]), v["T_limit"] - 1)
        return v

    def validate(self) -> None:
        check_choice("model", self.model, MODELS)
        check_choice("keys", self.keys, KEYS)
        if self.model == "authors" and self.d % 2:
            raise ConfigError(f"the authors' model needs an even d (sinusoidal positions), got d={self.d}")
        for name, low in (("H", 1), ("d", 1), ("n", 1), ("d_h", 1), ("d_v", 1), ("n_classes", 2), ("max_steps", 1),
                          ("warmup", 0), ("candidates", 1), ("T_limit", 2)):
            check_int(name, getattr(self, name), low)
        check_seed(self.seed)
        if self.warmup >= self.max_steps:
            raise ConfigError(f"warmup ({self.warmup}) must be smaller than max_steps ({self.max_steps})")
        check_number("lr", self.lr, 0, open_min=True)
        check_number("resolution", self.resolution, 0, 1, open_max=True)
        check_number("diverged_below", self.diverged_below, 0, 1)
        check_number("min_lr_ratio", self.min_lr_ratio, 0, 1)
        check_number("growth", self.growth, 1, open_min=True)
        check_int("T_start", self.T_start, 1, self.T_limit - 1)
        check_device(self.device)
        check_choice("dtype", self.dtype, (torch.float32, torch.float64))


SEARCH_STEP_OPS = 50  # torch ops of one step of train_candidates besides Adam (loss_and_grads, the stop test)
FOLDED_AUTHORS_OPS = 40  # the folded authors' model's further ops: embedding, the read-out, 8 gradients


def attempt_work(sc: SearchConfig, T: int, M: int, steps: int) -> dict[str, float]:
    """The work of :func:`train_candidates` training M models on up to T examples for ``steps``
    updates, as Estimate keywords (:mod:`attnlab.estimates`; C = n_classes, d_v, d_h of ``sc``,
    d_in = d):

        gemm   plain (folded):    3 M steps (2 T H n (d + C) + 2 H n d (d_h + d_v) + 2 H d n d_h + 2 H n d_v C)
               authors, keys="context" (folded, :mod:`attnlab.papers.memorization.authors_folded`):
                                  3 M steps (T (2 H n d + R) + 2 n d^2 + 2 H n d (d_h + d_v) + 2 H d n d_h
                                             + 2 d H n d + 2 H d_v d C),
                                  R = 2 H (n d_v + d_v C) values first, else 2 H n C (+ 2 H n d_v C per step)
               authors, keys="all": 3 M steps (T F_ex + F_model)     (capacity_cells.forward_flops)
        traffic  itemsize M steps (30 T H n + 10 T C + 10 P)     softmax, log-softmax, Adam
        calls    TORCH_OP steps (SEARCH_STEP_OPS + 5 ADAM_OPS)   (authors: + FOLDED_AUTHORS_OPS folded,
                                                                  + the autograd's STEP_OPS with keys="all")

    forward + backward counted as 3 forwards."""
    from attnlab.papers.memorization.authors_folded import values_first
    from attnlab.papers.memorization.capacity_cells import ADAM_OPS, STEP_OPS, TORCH_OP, forward_flops

    H, n, d, d_h, d_v, C = sc.H, sc.n, sc.d, sc.d_h, sc.d_v, sc.n_classes
    if sc.model == "authors" and sc.keys == "context":
        values_first = values_first(H, n, d_v, C)
        f_ex = 2.0 * H * n * d + (2.0 * H * (n * d_v + d_v * C) if values_first else 2.0 * H * n * C)
        f_model = (2.0 * n * d * d + 2.0 * H * n * d * (d_h + d_v) + 2.0 * H * d * n * d_h + 2.0 * d * H * n * d
                   + 2.0 * H * d_v * d * C + (0.0 if values_first else 2.0 * H * n * d_v * C))
        ops = SEARCH_STEP_OPS + FOLDED_AUTHORS_OPS
    elif sc.model == "authors":
        f_ex, f_model = forward_flops(H, n, d, d_h, d_v, C, shared_context=True, embedded=True)
        ops = SEARCH_STEP_OPS + STEP_OPS
    else:
        f_ex = 2.0 * H * n * (d + C)
        f_model = 2.0 * H * n * d * (d_h + d_v) + 2.0 * H * d * n * d_h + 2.0 * H * n * d_v * C
        ops = SEARCH_STEP_OPS
    P = H * d * (2 * d_h + d_v) + d * C + (d * d if sc.model == "authors" else 0)
    itemsize = torch.finfo(sc.dtype).bits // 8
    return {"gemm": 3.0 * M * steps * (T * f_ex + f_model),
            "traffic": float(itemsize * M * steps * (30 * T * H * n + 10 * T * C + 10 * P)),
            "calls": TORCH_OP * steps * (ops + 5 * ADAM_OPS)}


def search_rounds(sc: SearchConfig) -> list[int]:
    """The largest T of every round a search may run, at most: bracketing from T_start by the
    full factor ``growth`` (``candidates`` attempts a round) up to T_limit, then
    ceil(log(1 / resolution) / log(candidates + 1)) rounds of bisection at T_limit."""
    Ts, T = [], sc.T_start
    while T < sc.T_limit:
        for _ in range(sc.candidates):
            T = min(max(T + 1, math.ceil(T * sc.growth)), sc.T_limit)
        Ts.append(T)
    cuts = math.ceil(math.log(1 / max(sc.resolution, 1 / sc.T_limit)) / math.log(sc.candidates + 1))
    return Ts + [sc.T_limit] * cuts


def search_estimate(sc: SearchConfig, T: int | None = None, *, min_steps: int = 0) -> Estimate:
    """The search (T None) or one attempt at T examples.

    Memory: ``candidates`` models trained at once, full batch, on up to T_limit examples of one
    shared context (:func:`attnlab.papers.memorization.model.training_bytes`).

    Work: one attempt at T is :func:`attempt_work` (1 model, max_steps updates); a search is
    sum over :func:`search_rounds` of attempt_work(T_r, candidates, max_steps). Both are at the
    step budget and a search also at its limits (full growth, T_limit), where every model stops
    once it memorizes (after ``min_steps``): the time is an upper bound."""
    search = T is None
    T = sc.T_limit if search else T
    need = training_bytes(sc.candidates, T, sc.H, sc.n, sc.d, sc.d_h, sc.n_classes, shared_context=True,
                          embedded=sc.model == "authors", itemsize=torch.finfo(sc.dtype).bits // 8)
    if search:
        parts = [attempt_work(sc, T_r, sc.candidates, sc.max_steps) for T_r in search_rounds(sc)]
        work = {k: sum(p[k] for p in parts) for k in parts[0]}
    else:
        work = attempt_work(sc, T, 1, max(sc.max_steps, min_steps))
    return Estimate(need, f"{sc.candidates} models at H = {sc.H} on T = {T} examples ({sc.model} model)",
                    **work, lower=("T_limit", "H_grid"),
                    time_bound="the search's step budget and T_limit: a search stops at the first failure")


@dataclass(frozen=True)
class SearchResult:
    """largest_success: the largest T memorized (0: none tried succeeded); smallest_failure:
    the smallest T not memorized (None: none failed below T_limit); attempts in the order
    tried; rounds: {"T", "seconds"} per round; seconds: total wall time; params: the
    weights (one model, on the CPU) that memorize the first largest_success examples;
    verified_float64: those weights memorize them under attention_classifier in float64."""

    config: SearchConfig
    largest_success: int
    smallest_failure: int | None
    attempts: list[Attempt] = field(default_factory=list)
    rounds: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    params: Params | None = None
    verified_float64: bool | None = None

    @property
    def capacity(self) -> Bound:
        """T* as a censored value: >= largest_success. Every failure of the search is a failure
        within cfg.max_steps updates, so more steps may memorize more: the search bounds the
        largest T gradient descent memorizes from below, never from above."""
        budget = f"{self.config.max_steps}-step budget"
        if self.smallest_failure is None:
            why = f"no T up to T_limit={self.config.T_limit} failed within the {budget}"
        else:
            why = f"T={self.smallest_failure} was not memorized within the {budget}"
        return Bound.at_least(self.largest_success, why)


    def best_accuracy(self) -> dict[int, float]:
        """The highest final training accuracy any attempt reached at each T tried (a superseded
        attempt, stopped because a larger T of its round memorized, says nothing and is left out)."""
        out: dict[int, float] = {}
        for a in self.attempts:
            if a.outcome != "superseded":
                out[a.T] = max(out.get(a.T, 0.0), 1.0 if a.memorized else a.accuracy)
        return dict(sorted(out.items()))

    def largest_inversion(self) -> tuple[int, float, int, float] | None:
        """(T_a, acc_a, T_b, acc_b) with T_a < T_b and the largest rise acc_b - acc_a > 0 of
        :meth:`best_accuracy`; None where the accuracy never rises with T. A rise means that the
        attempt at T_a did not fail for want of capacity (a larger data set got further): its
        failure is the optimizer's, within the budget."""
        acc = list(self.best_accuracy().items())
        pairs = [(ta, aa, tb, ab) for i, (ta, aa) in enumerate(acc) for tb, ab in acc[i + 1:] if ab > aa]
        return max(pairs, key=lambda p: p[3] - p[1], default=None)


def _next_candidates(lo: int, hi: int | None, k: int, growth: float, T_limit: int) -> list[int]:
    """The next round's T: above lo by powers of growth while no failure is known (bracketing),
    else k points cutting (lo, hi) into k + 1 equal parts (bisection for k = 1)."""
    if hi is None:
        Ts, T = [], lo
        for _ in range(k):
            T = min(max(T + 1, math.ceil(T * growth)), T_limit)
            Ts.append(T)
        return sorted(set(Ts))
    pts = {lo + round((hi - lo) * (i + 1) / (k + 1)) for i in range(k)}
    return sorted(T for T in pts if lo < T < hi)


def search_capacity(cfg: SearchConfig, *, progress=None) -> SearchResult:
    """Largest T that cfg.max_steps full-batch Adam updates memorize, by bracketing + k-ary
    bisection over nested data sets (module docstring). ``progress(attempts)`` is called after
    every round. Memorization is monotone in T only empirically: the bracket keeps the largest
    success below the smallest failure, and every attempt is recorded."""
    E, e, y = draw_nested_dataset(cfg.T_limit, cfg.n, cfg.d, cfg.n_classes, cfg.seed, cfg.dtype)
    t0 = time.perf_counter()
    attempts: list[Attempt] = []
    rounds: list[dict] = []
    memorizing: dict[int, Params] = {}
    Ts = [cfg.T_start]
    while Ts:
        run_cfg = cfg
        while Ts:
            run = train_candidates(Ts, E, e, y, run_cfg)
            first_try = run_cfg.lr == cfg.lr  # a retry that diverges again counts as a failure
            tried = [replace(a, outcome="diverged") if first_try and a.outcome == "budget"
                     and a.accuracy < cfg.diverged_below else a for a in run.attempts]
            attempts += tried
            rounds.append({"T": Ts, "seconds": tried[0].seconds, "lr": run_cfg.lr})
            memorizing.update({a.T: {k: v[i].cpu() for k, v in run.params.items()}
                               for i, a in enumerate(tried) if a.memorized})
            Ts = [a.T for a in tried if a.outcome == "diverged"]  # retried once at half the rate
            run_cfg = replace(cfg, lr=cfg.lr / 2)
        if progress is not None:
            progress(attempts)
        lo, hi = _bracket(attempts)
        if hi is None:
            growth = _adaptive_growth(cfg, max(a.steps for a in attempts if a.T == lo and a.memorized))
            Ts = [] if lo >= cfg.T_limit else _next_candidates(lo, None, cfg.candidates, growth, cfg.T_limit)
        elif hi - lo <= max(1.0, cfg.resolution * lo):
            Ts = []
        else:
            Ts = _next_candidates(lo, hi, cfg.candidates, cfg.growth, cfg.T_limit)
    lo, hi = _bracket(attempts)
    best = memorizing.get(lo)
    verified = None if best is None else memorized_in_float64(best, E, e[:lo], y[:lo], model=cfg.model,
                                                              keys=cfg.keys)
    return SearchResult(cfg, lo, hi, attempts, rounds, time.perf_counter() - t0, best, verified)


def _adaptive_growth(cfg: SearchConfig, steps: int) -> float:
    """The bracketing factor after a success that took ``steps`` of the cfg.max_steps budget:
    1 + (growth - 1) max(1 - steps / max_steps, 0.1). Steps to memorize grow with T, so a
    success near the budget is near the largest T: the next attempts stay close to it
    instead of overshooting by the full factor (an overshoot costs a full-budget attempt
    at the largest T of the search)."""
    return 1.0 + (cfg.growth - 1.0) * max(1.0 - steps / cfg.max_steps, 0.1)


def _bracket(attempts: list[Attempt]) -> tuple[int, int | None]:
    """(largest success below the smallest failure (0: none), smallest failure (None: none))."""
    failures = [a.T for a in attempts if a.outcome == "budget"]
    hi = min(failures) if failures else None
    lo = max((a.T for a in attempts if a.memorized and (hi is None or a.T < hi)), default=0)
    return lo, hi
