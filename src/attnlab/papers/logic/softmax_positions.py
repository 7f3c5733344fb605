"""§3.2: attention on positions only, with softmax; gradient descent on the exact E[SSE].

Model (§3.1, eq. 3.1-3.3, with the constraint of §3.2): categories X_1..X_M i.i.d. uniform
on {1..N}, one-hot in R^N; query block q (M x M) on the positions, value map v (N x N) on
the categories; the prediction of column i is v sum_j q_ji X_j and its target X_{i-1}:

    E[SSE] = sum_{i=2}^M E || X_{i-1} - v sum_{j=1}^M q_ji X_j ||^2 .

§3.2 constrains every column of q to the simplex, as softmax produces it:

    q_ji >= 0,   sum_{j=1}^M q_ji = 1                                     (eq. 3.35)

(the text prints "q_ji >= 1", which no column of M >= 2 entries summing to 1 satisfies, and
later "sum_{j != i-1} q_ji = 1"; errata: logic.simplex). Here the constraint holds by construction:
q = softmax(L) column by column, q_ji = exp(L_ji) / sum_s exp(L_si), with free logits
L (M x M). Column 1 has no target (X_0 does not exist), so it never moves.

The text's conclusion (end of §3.2): the only minimum under the constraint is

    v = I_N,   q_{(i-1)i} = 1,   q_ji = 0 (j != i - 1)                   (i = 2..M)

and gradient descent cannot get stuck. Two remarks that the numbers here make concrete:
* the minimum lies on the boundary of the simplex, so softmax reaches it only as the logits
  grow without bound: the loss is never 0, and plain gradient descent approaches it slowly.
  With eps = 1 - q_{(i-1)i} the error is O(eps), so E[SSE] ~ eps^2, dE/dL ~ eps^2 and
  d eps/dt ~ -eps^3: eps ~ t^(-1/2) and E[SSE] ~ 1/t. Doubling the steps divides the
  distance to the intended weights by sqrt 2 and the loss by 2;
* the conditions the text derives at a stationary point -- the q-gradient of each column
  has equal entries (colinear with the gradient of sum_j q_ji, the Lagrange condition),
  Delta q = 1/Delta v (eq. 3.26) with Delta q = q_{(i-1)i} - q_ji, Delta v = v_kk - v_kl
  (eq. 3.23), and equal row means of v, here 1/N (eq. 3.22, 3.30) -- are approached along
  the descent, at the same rate.

Shapes: a batch of B starts is optimised at once, logits (B, M, M), v (B, N, N); the
expectation is the exact average over all N^M sequences (:func:`gradients.one_hot_categories`,
X_C as (N^M, N, M)). Float64 throughout.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from attnlab.errors import ConfigError
from attnlab.papers.logic.gradients import closed_form_gradient, one_hot_categories
from attnlab.runs.threads import num_threads

LR, STEPS = 0.5, 2000  # plain gradient descent; lr 1 diverges on v at N = 3, M = 4


def softmax_columns(logits: torch.Tensor) -> torch.Tensor:
    """q = softmax over j of L_ji, column by column: (..., M, M) -> (..., M, M), columns on the simplex."""
    return torch.softmax(logits, dim=-2)


def expected_sse(q: torch.Tensor, v: torch.Tensor, XC: torch.Tensor) -> torch.Tensor:
    """E[SSE] for a batch: q (B, M, M), v (B, N, N), XC (S, N, M) (all sequences) -> (B,).

    Column i of the prediction is v X_C q[:, i] = v sum_j q_ji X_j; the error is taken at
    i = 2..M against X_{i-1}."""
    pred = torch.einsum("bkl,sln,bnm->bskm", v, XC, q)  # (B, S, N, M)
    err = XC[None, :, :, :-1] - pred[..., 1:]
    return (err ** 2).sum(dim=(2, 3)).mean(dim=1)


def second_moments(XC: torch.Tensor) -> torch.Tensor:
    """C[a, b] = E[X_a X_b^t] (M, M, N, N), the average over the sequences XC (S, N, M).

    E[SSE] is quadratic in X, so these moments give it exactly (:func:`expected_sse_moments`)."""
    return torch.einsum("sna,smb->abnm", XC, XC) / XC.shape[0]


def expected_sse_moments(q: torch.Tensor, v: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
    """E[SSE] (B,) from the second moments C (M, M, N, N); equal to :func:`expected_sse`.

        E[SSE] = sum_{i>=2} [ tr C[i-1, i-1] - 2 sum_j q_ji tr(v C[j, i-1])
                              + sum_{j,s} q_ji q_si tr(v^t v C[s, j]) ]"""
    T = torch.einsum("bkl,jilk->bji", v, C)  # tr(v C[j, i])
    U = torch.einsum("bkl,sjlk->bsj", v.transpose(1, 2) @ v, C)  # tr(v^t v C[s, j])
    const = torch.einsum("iinn->i", C)[:-1].sum()
    lin = (q[:, :, 1:] * T[:, :, :-1]).sum(dim=(1, 2))
    quad = torch.einsum("bsi,bsj,bji->b", q[:, :, 1:], U, q[:, :, 1:])
    return const - 2.0 * lin + quad


def intended(N: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) of the text's solution: q = D_{-1} (q_{(i-1)i} = 1; column 1 is 0 here, it is free), v = I_N."""
    return np.eye(M, k=1), np.eye(N)


@dataclass(frozen=True)
class SoftmaxDescent:
    """Gradient descent from B random starts (:func:`descend`).

    q (B, M, M), v (B, N, N), logits (B, M, M): the end points; loss (B,): E[SSE] there;
    distance (B,): max over i >= 2 and all entries of |q - D_{-1}| and |v - I| (column 1 of q
    excluded: it has no target); distance_half, loss_half (B,): the same after steps // 2 steps.
    """

    N: int
    M: int
    lr: float
    steps: int
    q: np.ndarray
    v: np.ndarray
    logits: np.ndarray
    loss: np.ndarray
    distance: np.ndarray
    distance_half: np.ndarray
    loss_half: np.ndarray


def _distance(q: torch.Tensor, v: torch.Tensor) -> np.ndarray:
    N, M = v.shape[-1], q.shape[-1]
    q0, v0 = (torch.as_tensor(a, dtype=q.dtype, device=q.device) for a in intended(N, M))
    dq = (q[..., 1:] - q0[:, 1:]).abs().amax(dim=(-2, -1))
    dv = (v - v0).abs().amax(dim=(-2, -1))
    return torch.maximum(dq, dv).cpu().numpy()


def descend(N: int, M: int, starts: int, seed: int, *, lr: float = LR, steps: int = STEPS,
            device: str = "cpu") -> SoftmaxDescent:
    """Plain gradient descent on (L, v) from ``starts`` random starts, all batched in one tensor.

    Starts: L_ji ~ N(0, 1), v_kl ~ N(0, 1/N) (torch generator seeded with ``seed``). Each
    step: L -= lr dE/dL, v -= lr dE/dv, gradients by autograd of the exact E[SSE]. Runs on one
    torch thread (tiny tensors: faster, and bit-reproducible); cached per arguments."""
    if N < 2 or M < 2 or starts < 1 or steps < 2 or not lr > 0:
        raise ConfigError(f"need N >= 2, M >= 2, starts >= 1, steps >= 2, lr > 0; "
                          f"got {N}, {M}, {starts}, {steps}, {lr}")
    with num_threads(1):
        return _descend(N, M, starts, seed, float(lr), int(steps), device)


@functools.lru_cache(maxsize=8)
def _descend(N: int, M: int, starts: int, seed: int, lr: float, steps: int, device: str) -> SoftmaxDescent:
    XC = one_hot_categories(N, M).to(device)
    C = second_moments(XC)
    g = torch.Generator(device="cpu").manual_seed(seed)
    L = torch.randn(starts, M, M, generator=g, dtype=torch.float64).to(device).requires_grad_()
    v = (torch.randn(starts, N, N, generator=g, dtype=torch.float64) / np.sqrt(N)).to(device).requires_grad_()
    half = half_loss = None
    for step in range(steps):
        E = expected_sse_moments(softmax_columns(L), v, C)
        gL, gv = torch.autograd.grad(E.sum(), (L, v))  # starts are independent: the sum's gradient is each one's
        with torch.no_grad():
            L -= lr * gL
            v -= lr * gv
            if step + 1 == steps // 2:
                half = _distance(softmax_columns(L), v)
                half_loss = expected_sse_moments(softmax_columns(L), v, C).cpu().numpy()
    with torch.no_grad():
        q = softmax_columns(L)
        E = expected_sse(q, v, XC)
        return SoftmaxDescent(N, M, lr, steps, q.cpu().numpy(), v.detach().cpu().numpy(), L.detach().cpu().numpy(),
                              E.cpu().numpy(), _distance(q, v), half, half_loss)


@dataclass(frozen=True)
class StationaryConditions:
    """The text's §3.2 conditions at one point (q, v)."""

    lagrange: float  # max over columns i >= 2 of (max_j - min_j) dE/dq_ji (0 iff colinear with (1, ..., 1), eq. 3.35)
    grad_v: float  # max |dE/dv_kl| (v is unconstrained, so 0 at a stationary point)
    delta_q: float  # Delta q = mean over i >= 2 of q_{(i-1)i} - mean_{j != i-1} q_ji
    delta_v: float  # Delta v = mean diagonal - mean off-diagonal of v (eq. 3.23)
    delta_q_times_delta_v: float  # Delta q Delta v (1 by eq. 3.26)
    row_sum_spread: float  # max_k |sum_l v_kl - 1| (the row mean is 1/N, eq. 3.22 with column sums 1)


def stationary_conditions(q: np.ndarray, v: np.ndarray) -> StationaryConditions:
    """The text's §3.2 conditions at one point q (M x M, columns on the simplex), v (N x N).

    Gradients from :func:`gradients.closed_form_gradient` (checked against autograd there)."""
    q, v = np.asarray(q, np.float64), np.asarray(v, np.float64)
    M, N = q.shape[0], v.shape[0]
    gq, gv = closed_form_gradient(q, v)
    i = np.arange(1, M)
    diag = q[i - 1, i]
    others = (q[:, 1:].sum(0) - diag) / (M - 1)
    dq = float((diag - others).mean())
    off = ~np.eye(N, dtype=bool)
    dv = float(np.diag(v).mean() - v[off].mean())
    return StationaryConditions(lagrange=float((gq[:, 1:].max(0) - gq[:, 1:].min(0)).max()),
                                grad_v=float(np.abs(gv).max()), delta_q=dq, delta_v=dv, delta_q_times_delta_v=dq * dv,
                                row_sum_spread=float(np.abs(v.sum(1) - 1.0).max()))
