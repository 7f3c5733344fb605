"""The trainable one-level encoder of the logic text's §4, as a pure function of a parameter dict.

Tokens are the columns of X ((N + M) x M, :mod:`~attnlab.papers.logic.encoding`), d = N + M.
One model with parameters theta = (q, k, v, gamma, beta, B, b, C, c0) maps X to

    A   = k^t q                                   d x d   (q, k: d x d, single head)
    W   = X^t A X                                 M x M   (w_ji = X_j^t k^t q X_i, eq. 2.5)
    H   = X + v X W                               d x M   (skip + ATTENTION_*^t, eq. 2.2 / 2.28)
    Z   = LayerNorm(H) per column: gamma * (H_i - mean(H_i)) / sqrt(var(H_i) + eps) + beta
    Y^  = C ReLU(B Z + b) + c0                    1 x M   (B: h x d, b: h, C: 1 x h, c0: scalar)

i.e. "single-head dot-product attention without Softmax ... a normalization layer followed by
two linear layers with a ReLU activation in-between" (§4.1). The text does not say where the
skip connection goes; every solution of §2 adds X to the attention before the read-out
(eq. 2.12, 2.21, 2.32: Y = C ReLU(ATTENTION_*^t + X + bias)), so H = X + ATT^t here, and the
normalisation sits between H and the feed-forward. ``norm="none"`` drops it (Z = H): then the
hand-built weights of solutions 2 and 3 load exactly (:func:`hand_built_params`: B = I, b = the
solution's bias, C = the solution's C), which the tests use.

**Access patterns** (§4, the table before §4.1, and §4.1: "In these the corresponding attention
weights k, q, v have access to either positional or input information"). Each model carries 0/1
masks applied to its weights in the forward (so the masked entries get zero gradient and never move):

    system 1   q, k read positions only (A = diag(0, A_PP)); v maps categories to categories;
               B full (h = N^2 rows suffice for solution 1's pair detectors).
    system 2   q, k read categories only (A = diag(A_CC, 0)); v maps positions to positions;
               B full: solution 2 needs no B, "but we can still put in a matrix B so as to have a
               compatible architecture for both approaches!" (§4); ``B="diagonal"`` restricts it
               to its diagonal (the variant attnlab trained before, not the text's).
    system 3   q, k read positions only; v maps categories to categories; B diagonal
               ("B[N^2 x (N+M)] or no B (third solution)", the table: with B full too, system 3
               would be system 1, the same masks).
    combined   no mask: q, k, v, B full.

Masking q and k by columns (q = (0 | q_P), k = (0 | k_P)) is the text's Q^t = (0, q) X: then
k^t q has only its PP block. Every model has the same shapes (h = max(N^2, d) hidden units),
so all of them train in one :func:`attnlab.training.train_batched` call.

**Gauge** (what the output cannot see). Every column of X has one 1 among the categories and
one among the positions, so g = (1_N; -1_M) satisfies X^t g = 0: A -> A + g w^t + w' g^t and
v -> v + u g^t leave Y^ unchanged, and with the LayerNorm so does v -> v + 1_d u^t (the mean
of each column is subtracted). :mod:`~attnlab.papers.logic.mechanism` measures structure only
up to these.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.papers.logic.solutions import LogicWeights
from attnlab.training.chunked import chunked_sum

SYSTEMS = ("1", "2", "3", "combined")
NORMS = ("layernorm", "none")
LN_EPS = 1e-5
PARAM_NAMES = ("q", "k", "v", "gamma", "beta", "B", "b", "C", "c0")


def hidden_width(N: int, M: int) -> int:
    """h = max(N^2, N + M): room for solution 1's N^2 pair detectors and for B = I_d (solutions 2, 3)."""
    return max(N * N, N + M)


B_MASKS = ("full", "diagonal")


def masks(system: str, N: int, M: int, *, B: str | None = None, dtype=torch.float64, device="cpu"
          ) -> dict[str, Tensor]:
    """The 0/1 masks of one system (module docstring): q, k (d x d, by column), v (d x d), B (h x d).

    ``B``: None gives each system's own (diagonal for system 3, full for the others); "full" or
    "diagonal" (B's first d rows masked to I_d, the rest 0) overrides it."""
    if system not in SYSTEMS:
        raise ConfigError(f"system must be one of {', '.join(SYSTEMS)}, got {system!r}")
    if B is not None and B not in B_MASKS:
        raise ConfigError(f"B must be one of {', '.join(B_MASKS)}, got {B!r}")
    d, h = N + M, hidden_width(N, M)
    ones = lambda *s: torch.ones(*s, dtype=dtype, device=device)  # noqa: E731
    mq, mv, mB = ones(d, d), ones(d, d), ones(h, d)
    if system in ("1", "3"):
        mq[:, :N] = 0  # q, k read positions only
        mv = torch.zeros(d, d, dtype=dtype, device=device)
        mv[:N, :N] = 1  # categories -> categories
    elif system == "2":
        mq[:, N:] = 0  # q, k read categories only
        mv = torch.zeros(d, d, dtype=dtype, device=device)
        mv[N:, N:] = 1  # positions -> positions
    if (B or ("diagonal" if system == "3" else "full")) == "diagonal":
        mB = torch.zeros(h, d, dtype=dtype, device=device)
        mB[:d, :d] = torch.eye(d, dtype=dtype, device=device)
    return {"q": mq, "k": mq.clone(), "v": mv, "B": mB}


def init_params(N: int, M: int, generator: torch.Generator, *, dtype=torch.float64, device="cpu") -> dict[str, Tensor]:
    """One model's initial parameters: q, k, v ~ N(0, 1/d) entries; B, b ~ U(+-1/sqrt(d)) and
    C, c0 ~ U(+-1/sqrt(h)) (torch.nn.Linear's default); gamma = 1, beta = 0. Drawn on the CPU
    from ``generator`` in a fixed order, then moved, so a seed gives the same model everywhere."""
    d, h = N + M, hidden_width(N, M)

    def normal(*shape, std):
        return torch.randn(*shape, generator=generator, dtype=torch.float64) * std

    def uniform(*shape, bound):
        return (torch.rand(*shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound

    p = {"q": normal(d, d, std=1 / math.sqrt(d)), "k": normal(d, d, std=1 / math.sqrt(d)),
         "v": normal(d, d, std=1 / math.sqrt(d)), "gamma": torch.ones(d, dtype=torch.float64),
         "beta": torch.zeros(d, dtype=torch.float64), "B": uniform(h, d, bound=1 / math.sqrt(d)),
         "b": uniform(h, bound=1 / math.sqrt(d)), "C": uniform(1, h, bound=1 / math.sqrt(h)),
         "c0": uniform(1, bound=1 / math.sqrt(h))}
    return {k: t.to(dtype=dtype, device=device) for k, t in p.items()}


def effective(params: dict[str, Tensor], mask: dict[str, Tensor]) -> dict[str, Tensor]:
    """The weights the forward uses: every masked parameter times its mask."""
    out = dict(params)
    for name in ("q", "k", "v", "B"):
        out[name] = params[name] * mask[name]
    return out


def attention_t(X: Tensor, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """ATTENTION_*(Q, K, V)^t = v X X^t k^t q X (eq. 2.28) with dense X (S, d, M) -> (S, d, M):
    the reference the one-hot path of :func:`predict` is tested against."""
    W = X.transpose(-1, -2) @ (k.T @ q) @ X
    return v @ X @ W


def hidden_rows(params: dict[str, Tensor], tokens: Tensor, N: int, *, attention: bool = True) -> Tensor:
    """H^t = (X + ATTENTION_*^t)^t, tokens as rows: (S, M, d), from the categories ``tokens`` (S, M).

    One-hot X never becomes a matrix product: with A = k^t q and t_j the category of token j,

        (X^t A)[j, :]  = A[t_j, :] + A[N + j, :]                  (row gathers)
        W[j, i]        = (X^t A)[j, t_i] + (X^t A)[j, N + i]        (column gathers)
        (X W)^t[i, :]  = (sum_j W[j, i] e_{t_j} ; W[:, i])           (one (S, M, M) x (S, M, N) product)
        ATT^t rows     = (X W)^t v^t

    which is eq. 2.28 exactly (tests: the dense :func:`attention_t` to 1e-12 in float64)."""
    S, M = tokens.shape
    d = params["v"].shape[0]
    onehot = torch.nn.functional.one_hot(tokens, N).to(params["v"].dtype)  # (S, M, N)
    H = torch.cat([onehot, torch.eye(M, dtype=onehot.dtype, device=onehot.device).expand(S, M, M)], dim=-1)
    if not attention:
        return H
    A = params["k"].T @ params["q"]  # (d, d)
    P = A[:N][tokens] + A[N:]  # (S, M, d): row j is X_j^t A
    W = P[..., :N].gather(2, tokens[:, None, :].expand(S, M, M)) + P[..., N:]  # (S, M_j, M_i)
    Wt = W.transpose(1, 2)  # (S, M_i, M_j)
    XW = torch.cat([Wt @ onehot, Wt], dim=-1)  # (S, M, d): row i is (X W)[:, i]^t
    return H + (XW.reshape(S * M, d) @ params["v"].T).reshape(S, M, d)


def readout(H: Tensor, params: dict[str, Tensor], *, norm: str = "layernorm", relu: bool = True) -> Tensor:
    """Y^ = C ReLU(B Z + b) + c0 with Z = LayerNorm(H) per token (or Z = H for ``norm="none"``):
    (S, M) from the rows H (S, M, d). The LayerNorm is torch's fused one, gamma * (H_i - mean(H_i)) /
    sqrt(var(H_i) + eps) + beta with the biased variance and eps = LN_EPS, the module docstring's formula."""
    d = H.shape[-1]
    if norm == "layernorm":
        H = F.layer_norm(H, (d,), params["gamma"], params["beta"], LN_EPS)
    U = F.linear(H, params["B"], params["b"])
    if relu:
        U = torch.relu(U)
    return F.linear(U, params["C"], params["c0"])[..., 0]


def predict(params: dict[str, Tensor], tokens: Tensor, N: int, *, norm: str = "layernorm",
            attention: bool = True, relu: bool = True) -> Tensor:
    """Y^ (S, M) of one model with effective weights ``params`` on the categories ``tokens`` (S, M).

    attention=False drops ATT^t (H = X); relu=False replaces the ReLU by the identity (a linear
    feed-forward): the two ablations of :mod:`~attnlab.papers.logic.mechanism`."""
    return readout(hidden_rows(params, tokens, N, attention=attention), params, norm=norm, relu=relu)


def mse(params: dict[str, Tensor], mask: dict[str, Tensor], tokens: Tensor, Y: Tensor, N: int, *,
        norm: str = "layernorm") -> Tensor:
    """mean over sequences and positions of (Y^ - Y)^2 (the §4 loss; Y_1 = 0 is a target too)."""
    return ((predict(effective(params, mask), tokens, N, norm=norm) - Y) ** 2).mean()


CHUNK_ROWS = 2500
"""token rows per chunk of :func:`chunked_mse`: its largest intermediate, (2500 x h) float32, is 1 MiB
at the text's h = 100 and stays in a core's cache (``benchmarks/bench_logic_training.py``)."""


def _chunk_share(params: dict[str, Tensor], chunk: tuple[Tensor, Tensor], *, N: int, norm: str,
                 count: int) -> Tensor:
    tokens, Y = chunk
    return ((predict(params, tokens, N, norm=norm) - Y) ** 2).sum() / count


def chunked_mse(params: dict[str, Tensor], tokens: Tensor, Y: Tensor, N: int, *, norm: str = "layernorm",
                rows: int | None = None) -> Tensor:
    """The §4 loss of :func:`mse` for effective weights ``params``, evaluated over chunks of about ``rows``
    token rows (ceil(rows / M) sequences) by :func:`attnlab.training.chunked.chunked_sum`: the same value
    and gradient up to floating-point order, at 1.4 to 2 times the speed of one pass at the text's
    batch (the products' outputs stay in cache). ``rows``: None is :data:`CHUNK_ROWS`. For training; not under
    ``torch.func`` transforms."""
    S, M = tokens.shape
    per = max(1, -(-(CHUNK_ROWS if rows is None else rows) // M))
    chunks = [(tokens[s:s + per], Y[s:s + per]) for s in range(0, S, per)]
    return chunked_sum(functools.partial(_chunk_share, N=N, norm=norm, count=tokens.numel()), params, chunks)


def hand_built_params(w: LogicWeights, *, dtype=torch.float64, device="cpu") -> dict[str, Tensor]:
    """Solution 2 or 3's weights (:mod:`~attnlab.papers.logic.solutions`) as parameters of this model
    with ``norm="none"``: q, k, v as built, B = [I_d; 0], b = (bias; 0), C = (C, 0), c0 = 0, so
    C ReLU(B H + b) is the solution's C ReLU(H + bias) exactly. (Solution 1's B has N^2 rows of 2 e_a + e_b
    and its own bias; it loads the same way with B, b, C its own.)"""
    N, M = w.N, w.M
    d, h = N + M, hidden_width(N, M)
    if w.form not in ("relu", "relu-B"):
        raise ConfigError(f"solution {w.solution!r} has no ReLU read-out; load solution 1, 2 or 3")
    if w.q.shape[0] > d:
        raise ConfigError(f"q has {w.q.shape[0]} rows, more than d = {d}")
    t = lambda a: torch.as_tensor(np.asarray(a, np.float64), dtype=dtype, device=device)  # noqa: E731
    pad = lambda a: np.vstack([a, np.zeros((d - a.shape[0], d))])  # noqa: E731  (d_k rows -> d)
    B = np.zeros((h, d))
    b = np.zeros(h)
    C = np.zeros((1, h))
    if w.form == "relu":
        B[:d] = np.eye(d)
        b[:d] = w.bias
        C[0, :d] = w.C[0]
    else:
        K = w.B.shape[0]
        B[:K], b[:K], C[0, :K] = w.B, w.bias, w.C[0]
    return {"q": t(pad(w.q)), "k": t(pad(w.k)), "v": t(w.v), "gamma": t(np.ones(d)), "beta": t(np.zeros(d)),
            "B": t(B), "b": t(b), "C": t(C), "c0": t(np.zeros(1))}
