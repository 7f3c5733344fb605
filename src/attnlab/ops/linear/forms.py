"""The computational forms of linear attention, math text §2.1.2.

Every form computes, for each query i, the pair (numerator, denominator)

    N_i = phi(Q_i)^T sum_{j in J(i)} phi(K_j) V_j^T,    D_i = phi(Q_i)^T sum_{j in J(i)} phi(K_j)

in one pass by carrying V with a column of ones appended, U = [V, 1] (n_k, d_v + 1):
row i of the result is [N_i, D_i]. J(i) is every key (non-causal) or the keys
j <= i + offset (causal; offset 0 = top-left, n_k - n_q = bottom-right).

Inputs: phi_q (..., n_q, m), phi_k (..., n_k, m) with padding keys already zeroed,
U (..., n_k, d_v + 1); all share the batch shape. Output (..., n_q, d_v + 1).

| form           | cost               | memory beyond inputs        |
|----------------|--------------------|-----------------------------|
| noncausal      | O(n m d)           | m x d                       |
| causal_chunked | O(n (C + m) d)     | (n/C) x m x d  +  n x C     |
| causal_cumsum  | O(n m d)           | n x m x d  (reference only) |
| recurrent      | O(n m d), n steps  | m x d (the RNN state)       |
| quadratic      | O(n² (m + d))      | n x n (any boolean mask)    |
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def noncausal_form(phi_q: Tensor, phi_k: Tensor, U: Tensor) -> Tensor:
    """[N, D] = phi(Q) (phi(K)^T U): the associativity step after eq. (15)."""
    S = phi_k.transpose(-2, -1) @ U  # (..., m, d_v + 1) = [sum_j phi(K_j) V_j^T, sum_j phi(K_j)]
    return phi_q @ S  # (..., n_q, d_v + 1)


def align_causal(phi_k: Tensor, U: Tensor, n_q: int, offset: int) -> tuple[Tensor, Tensor, Tensor]:
    """Reduce "query i sees keys j <= i + offset" to a square causal problem.

    Returns (S0, phi_k_a, U_a): S0 (..., m, d_v + 1) sums the keys j < offset, which
    every query sees; phi_k_a (..., n_q, m) and U_a (..., n_q, d_v + 1) hold key
    t + offset at position t (zero features where no such key exists), so query t
    sees S0 plus aligned keys 0..t.
    """
    n_k = phi_k.shape[-2]
    lo = min(max(offset, 0), n_k)
    S0 = phi_k[..., :lo, :].transpose(-2, -1) @ U[..., :lo, :]  # (..., m, d_v + 1)
    start, stop = max(offset, 0), min(offset + n_q, n_k)
    front = max(-offset, 0)
    seg_k, seg_u = phi_k[..., start:max(stop, start), :], U[..., start:max(stop, start), :]
    back = n_q - front - seg_k.shape[-2]
    if front > n_q:  # every query precedes every key
        front, back = n_q, 0
        seg_k, seg_u = seg_k[..., :0, :], seg_u[..., :0, :]
    phi_k_a = _pad_rows(seg_k, front, back)  # (..., n_q, m)
    U_a = _pad_rows(seg_u, front, back)  # (..., n_q, d_v + 1)
    return S0, phi_k_a, U_a


def _pad_rows(x: Tensor, front: int, back: int) -> Tensor:
    """Zero rows before and after x along the token axis (no copy when there are none)."""
    return x if front == back == 0 else F.pad(x, (0, 0, front, back))


def causal_chunked_form(
    phi_q: Tensor, phi_k: Tensor, U: Tensor, offset: int = 0, chunk_size: int = 64
) -> Tensor:
    """Causal [N, D] in chunks of C = chunk_size queries.

    Within a chunk, the masked quadratic form tril(phi(Q_c) phi(K_c)^T) U_c; across
    chunks, the state S_c = S0 + sum_{c' < c} phi(K_c')^T U_c' (an exclusive cumsum
    over n/C chunk states, never over n tokens), read by phi(Q_c) S_c.
    """
    n_q, m = phi_q.shape[-2], phi_q.shape[-1]
    S0, phi_k, U = align_causal(phi_k, U, n_q, offset)
    C = max(1, min(chunk_size, n_q))
    nc = -(-n_q // C)
    pad = nc * C - n_q
    batch = phi_q.shape[:-2]
    e = U.shape[-1]
    q_c = _pad_rows(phi_q, 0, pad).reshape(*batch, nc, C, m)  # (..., nc, C, m)
    k_c = _pad_rows(phi_k, 0, pad).reshape(*batch, nc, C, m)  # (..., nc, C, m)
    u_c = _pad_rows(U, 0, pad).reshape(*batch, nc, C, e)  # (..., nc, C, d_v + 1)
    A = (q_c @ k_c.transpose(-2, -1)).tril()  # key t visible to query s iff t <= s, (..., nc, C, C)
    states = k_c.transpose(-2, -1) @ u_c  # (..., nc, m, d_v + 1)
    # Exclusive prefix over chunks: chunk c reads S0 + states of chunks 0..c-1.
    shifted = torch.cat([S0.unsqueeze(-3), states[..., :-1, :, :]], dim=-3)  # (..., nc, m, e)
    prefix = torch.cumsum(shifted, dim=-3)  # (..., nc, m, d_v + 1)
    inter = (q_c @ prefix).reshape(-1, C, e)  # (batch * nc, C, d_v + 1)
    out = torch.baddbmm(inter, A.reshape(-1, C, C), u_c.reshape(-1, C, e))  # inter + A u_c
    return out.reshape(*batch, nc * C, e)[..., :n_q, :]


def causal_cumsum_form(phi_q: Tensor, phi_k: Tensor, U: Tensor, offset: int = 0) -> Tensor:
    """Causal [N, D] by a plain prefix sum of the n outer products phi(K_j) U_j^T.

    S_i = S0 + sum_{t <= i} phi(K_t) U_t^T is materialised for every i: (..., n, m, d_v+1),
    memory-bound. The reference the chunked form is tested against.
    """
    S0, phi_k, U = align_causal(phi_k, U, phi_q.shape[-2], offset)
    outer = phi_k.unsqueeze(-1) * U.unsqueeze(-2)  # (..., n_q, m, d_v + 1)
    S = torch.cumsum(outer, dim=-3) + S0.unsqueeze(-3)  # (..., n_q, m, d_v + 1)
    return (phi_q.unsqueeze(-2) @ S).squeeze(-2)  # (..., n_q, d_v + 1)


def recurrent_form(phi_q: Tensor, phi_k: Tensor, U: Tensor, offset: int = 0) -> Tensor:
    """Causal [N, D] one token at a time: the linear transformer as an RNN.

        S_i = S_{i-1} + phi(K_i) V_i^T,   z_i = z_{i-1} + phi(K_i),   [N_i, D_i] = phi(Q_i)^T [S_i, z_i]

    (S and z travel together as the state [S, z] of shape (..., m, d_v + 1).)
    """
    S, phi_k, U = align_causal(phi_k, U, phi_q.shape[-2], offset)
    rows = []
    for t in range(phi_q.shape[-2]):
        S = S + phi_k[..., t, :, None] * U[..., t, None, :]  # (..., m, d_v + 1)
        rows.append((phi_q[..., t, None, :] @ S).squeeze(-2))  # (..., d_v + 1)
    return torch.stack(rows, dim=-2)  # (..., n_q, d_v + 1)


def quadratic_form(
    phi_q: Tensor, phi_k: Tensor, U: Tensor, allowed: Tensor | None
) -> tuple[Tensor, Tensor]:
    """[N, D] through the n_q x n_k kernel matrix Kmat_ij = phi(Q_i)·phi(K_j), zeroed where
    ``allowed`` (bool, broadcastable to (..., n_q, n_k)) is False. Returns ([N, D], Kmat)."""
    Kmat = phi_q @ phi_k.transpose(-2, -1)  # (..., n_q, n_k)
    if allowed is not None:
        Kmat = Kmat.masked_fill(~allowed, 0.0)
    return Kmat @ U, Kmat
