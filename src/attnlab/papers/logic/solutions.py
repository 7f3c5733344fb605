"""The three hand-programmed one-level transformers of the logic text (§2), for any N, M, q_true.

Attention without softmax (eq. 2.2, 2.28), tokens as the columns of X ((N + M) x M):

    ATTENTION_*(Q, K, V)^t = v X K Q^t = v X X^t k^t q X      (N + M) x M

(column i is sum_j w_ji v X_j with w_ji = X_j^t k^t q X_i, eq. 2.5). Every solution below
gives Y_i = q_true(X_{i-1}, X_i) for i >= 2 and Y_1 = 0, with every constant folded into
the stored weights:

* **Solution 1** (§2.1, eq. 2.12): q = (0 | 2 D_{-1}), k = (0 | I_M), v = diag(I_N, 0), so
  column i of ATTENTION_*^t + X is 2 X_{C,i-1} + X_{C,i} (plus the position). B has N^2
  rows, pair (a, b) -> 2 e_a + e_b on the category block (the M positional columns 0), in
  the order of eq. 2.11: the N diagonal pairs (a, a) first, then the off-diagonal pairs row
  by row (so that pair (3, 2) is row 12 at N = 4, as the text says). bias = -8 on the
  diagonal rows, -4 on the others. Y = C ReLU(B (ATTENTION_*^t + X) + bias).

  Proof sketch. Write x = 2 e_c + e_d (c = X_{i-1}, d = X_i). Row (a, a): 3 x_a - 8 > 0 iff
  x_a = 3 iff c = d = a, value 1. Row (a, b), a != b: 2 x_a + x_b - 4 is 1 at (c, d) = (a, b),
  2 at (c, d) = (a, a) and <= 0 otherwise (the nine cases of (x_a, x_b)). So with h the
  hidden vector, [pair = (a, b)] = h_ab - 2 h_aa, and

      C_ab = q(a, b) (a != b),   C_aa = q(a, a) - 2 sum_{b != a} q(a, b)

  gives C h = q(c, d). At i = 1 the attention column is 0 (D_{-1} has no predecessor), x =
  e_{X_1}, every row is <= 0 and Y_1 = 0. The text's C (eq. 2.11: C_ab = q(a, b) for every
  row) is wrong on repeated pairs: no single ReLU unit can be on for (a, b) alone, since
  2 e_a + e_b = (1/2)(3 e_a) + (1/2)(2 e_b + e_a) is the midpoint of the inputs of (a, a)
  and (b, a), and ReLU(affine) is convex (the same holds for any weight lambda != 1 in
  place of 2; errata: logic.solution1-repeated-pairs).

* **Linear special case** (eq. 2.13): for q_true(a, b) = base * d_a + d_b (the text: base
  10, digits d = 0..9, Y_i the two-digit number X_{i-1} X_i), q = (0 | base D_{-1}), no B,
  no ReLU, C = (d | 0), Y = C (ATTENTION_*^t + X). Here Y_1 = d_{X_1}, not 0: a linear
  read-out of column 1 cannot vanish for every X_1 unless d = 0.

* **Solution 2** (§2.2, eq. 2.21): q = (A_2 | 0), k = (I_N | 0) so w_ji = q_true(X_j, X_i);
  v = diag(0, S / c) with S = D_{-1}^t, so ATTENTION_*^t = (0; S X_C^t A_2 X_C / c) and its
  positional block holds q_true(X_{r-1}, X_i) / c in row r, column i (row 1 zero).
  bias = (0_N; (m / c - 1) 1_M), C = (-m 1_N | c 1_M).

* **Solution 3** (§2.3, eq. 2.32): k^t q = diag(0, D_{-1}) (q = (0 | D_{-1}), k = (0 | I_M)),
  v = diag(A_2^t / c, 0), so ATTENTION_*^t = (A_2^t X_C D_{-1} / c; 0): column i of the
  category block is q_true(X_{i-1}, .) / c. bias = ((m / c - 1) 1_N; 0_M), C = (c 1_N | -m 1_M).

**The ReLU constant** (solutions 2 and 3; the text's 100). The read-out adds the skip X
(one entry 1 where the wanted value sits) and the bias m/c - 1, so the wanted entry is
ReLU((q + m)/c) = (q + m)/c iff q + m >= 0, and every other entry is ReLU((q' + m)/c - 1) =
0 iff q' + m <= c. The block the skip does not select contributes ReLU(X + 0) summing to
1 per column, and C's -m removes the offset m. Hence the exact condition, for N >= 2, M >= 3
(every pair (a, b) then appears at an unselected entry of some sequence):

    m >= max(0, -min q_true)   and   c >= m + max(0, max q_true),

smallest at c* = max(0, max q_true) + max(0, -min q_true) (the range of q_true when it
takes both signs; at most 2 max |q_true|). Below c* a sequence leaks ReLU(q' + m - c) > 0
into its output. The text's version has no offset (m = 0): it needs c >= max q_true, and
then still outputs ReLU(q_true), i.e. clips every negative target to 0 whatever c is
(``shift=False`` builds it, to show this).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from attnlab.errors import ConfigError
from attnlab.papers.logic.encoding import shift_matrix

SOLUTIONS = ("1", "1-linear", "2", "3")
CHUNK = 2048  # sequences per batched forward


@dataclass(frozen=True)
class LogicWeights:
    """One solution's weights in the text's orientation (tokens are columns of X).

    q, k: (d_k, N + M); v: (N + M, N + M); B: (N^2, N + M) (solution 1 only, else None);
    bias: (K,) added to every column before the ReLU (K = N^2 for solution 1, N + M for 2, 3;
    zeros and unused for the linear case); C: (1, K). relu_const: the c of the read-out
    (solutions 2, 3), offset: m. form: "relu-B" (Y = C ReLU(B(ATT^t + X) + bias)), "linear"
    (Y = C (ATT^t + X)), "relu" (Y = C ReLU(ATT^t + X + bias)).
    """

    solution: str
    N: int
    M: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    C: np.ndarray
    bias: np.ndarray
    form: str
    B: np.ndarray | None = None
    relu_const: float | None = None
    offset: float = 0.0
    notes: tuple[str, ...] = field(default=())

    def arrays(self) -> dict[str, np.ndarray]:
        out = dict(q=self.q, k=self.k, v=self.v, C=self.C, bias=self.bias)
        if self.B is not None:
            out["B"] = self.B
        return out


def relu_threshold(q_true: np.ndarray) -> float:
    """c* = max(0, max q_true) + max(0, -min q_true): the smallest exact ReLU constant (module doc)."""
    q_true = np.asarray(q_true, np.float64)
    return float(max(0.0, q_true.max()) + max(0.0, -q_true.min()))


def _check(q_true: np.ndarray, M: int) -> tuple[np.ndarray, int]:
    q_true = np.asarray(q_true, np.float64)
    if q_true.ndim != 2 or q_true.shape[0] != q_true.shape[1] or q_true.shape[0] < 1:
        raise ConfigError(f"q_true must be a square N x N table with N >= 1, got shape {q_true.shape}")
    if not np.all(np.isfinite(q_true)):
        raise ConfigError("q_true must be finite")
    if not isinstance(M, (int, np.integer)) or M < 2:
        raise ConfigError(f"M must be an integer >= 2 (a pair needs two positions), got {M!r}")
    return q_true, q_true.shape[0]


def block_diagonal(top_left: np.ndarray | None, bottom_right: np.ndarray | None, N: int, M: int) -> np.ndarray:
    """The (N+M) x (N+M) matrix with the category block top_left (N x N) and the position block
    bottom_right (M x M); a block given as None is zero."""
    out = np.zeros((N + M, N + M))
    if top_left is not None:
        out[:N, :N] = top_left
    if bottom_right is not None:
        out[N:, N:] = bottom_right
    return out


def pair_order(N: int) -> list[tuple[int, int]]:
    """The rows of B and entries of C in solution 1 (eq. 2.11): (a, a) for a = 0..N-1, then
    the pairs (a, b), a != b, row by row (0-based categories)."""
    return [(a, a) for a in range(N)] + [(a, b) for a in range(N) for b in range(N) if a != b]


def solution1(q_true: np.ndarray, M: int, *, text_C: bool = False) -> LogicWeights:
    """Solution 1 (§2.1, eq. 2.12) for q_true (N x N) and length M (module docstring).

    text_C: use the text's C (eq. 2.11, C_ab = q(a, b) on every row), which is wrong on
    repeated pairs X_{i-1} = X_i (kept to show it; errata: logic.solution1-repeated-pairs)."""
    q_true, N = _check(q_true, M)
    D = shift_matrix(M)
    q = np.hstack([np.zeros((M, N)), 2.0 * D])
    k = np.hstack([np.zeros((M, N)), np.eye(M)])
    v = block_diagonal(np.eye(N), None, N, M)
    pairs = pair_order(N)
    B = np.zeros((N * N, N + M))
    bias = np.zeros(N * N)
    C = np.zeros((1, N * N))
    for r, (a, b) in enumerate(pairs):
        B[r, a] += 2.0
        B[r, b] += 1.0
        bias[r] = -8.0 if a == b else -4.0
        C[0, r] = q_true[a, b]
        if a == b and not text_C:
            C[0, r] -= 2.0 * (q_true[a].sum() - q_true[a, a])
    return LogicWeights("1", N, M, q, k, v, C, bias, "relu-B", B=B,
                        notes=("text's C (eq. 2.11)",) if text_C else ())


def solution1_linear(digits: np.ndarray, M: int, base: float) -> LogicWeights:
    """The linear special case (eq. 2.13): q_true(a, b) = base d_a + d_b; Y_1 = d_{X_1}."""
    d = np.asarray(digits, np.float64).ravel()
    N = d.size
    _check(np.zeros((N, N)), M)
    if not np.isfinite(base) or not np.all(np.isfinite(d)):
        raise ConfigError("base and digits must be finite")
    q = np.hstack([np.zeros((M, N)), base * shift_matrix(M)])
    k = np.hstack([np.zeros((M, N)), np.eye(M)])
    v = block_diagonal(np.eye(N), None, N, M)
    C = np.concatenate([d, np.zeros(M)])[None, :]
    return LogicWeights("1-linear", N, M, q, k, v, C, np.zeros(N + M), "linear")


def linear_q_true(digits: np.ndarray, base: float) -> np.ndarray:
    """q_true(a, b) = base d_a + d_b, the table the linear case computes."""
    d = np.asarray(digits, np.float64).ravel()
    return base * d[:, None] + d[None, :]


def _relu_consts(q_true: np.ndarray, relu_const: float | None, shift: bool) -> tuple[float, float]:
    m = max(0.0, -float(q_true.min())) if shift else 0.0
    c_star = relu_threshold(q_true) if shift else max(0.0, float(q_true.max()))
    c = (2.0 * c_star if c_star > 0 else 1.0) if relu_const is None else float(relu_const)
    if not np.isfinite(c) or c <= 0:
        raise ConfigError(f"relu_const must be a positive finite number, got {relu_const!r}")
    return c, m


def solution2(q_true: np.ndarray, M: int, *, relu_const: float | None = None, shift: bool = True) -> LogicWeights:
    """Solution 2 (§2.2, eq. 2.21). relu_const: c (default 2 c*, exact iff c >= c*);
    shift=False: the text's read-out without the offset m (outputs ReLU(q_true))."""
    q_true, N = _check(q_true, M)
    c, m = _relu_consts(q_true, relu_const, shift)
    q = np.hstack([q_true, np.zeros((N, M))])
    k = np.hstack([np.eye(N), np.zeros((N, M))])
    v = block_diagonal(None, shift_matrix(M).T / c, N, M)
    bias = np.concatenate([np.zeros(N), np.full(M, m / c - 1.0)])
    C = np.concatenate([np.full(N, -m), np.full(M, c)])[None, :]
    return LogicWeights("2", N, M, q, k, v, C, bias, "relu", relu_const=c, offset=m)


def solution3(q_true: np.ndarray, M: int, *, relu_const: float | None = None, shift: bool = True) -> LogicWeights:
    """Solution 3 (§2.3, eq. 2.32); relu_const and shift as in :func:`solution2`."""
    q_true, N = _check(q_true, M)
    c, m = _relu_consts(q_true, relu_const, shift)
    q = np.hstack([np.zeros((M, N)), shift_matrix(M)])
    k = np.hstack([np.zeros((M, N)), np.eye(M)])
    v = block_diagonal(q_true.T / c, None, N, M)
    bias = np.concatenate([np.full(N, m / c - 1.0), np.zeros(M)])
    C = np.concatenate([np.full(N, c), np.full(M, -m)])[None, :]
    return LogicWeights("3", N, M, q, k, v, C, bias, "relu", relu_const=c, offset=m)


def build(solution: str, q_true: np.ndarray, M: int, **kw) -> LogicWeights:
    """Solution "1", "2" or "3" for q_true (the linear case has its own builder)."""
    if solution == "1":
        return solution1(q_true, M, **kw)
    if solution == "2":
        return solution2(q_true, M, **kw)
    if solution == "3":
        return solution3(q_true, M, **kw)
    raise ConfigError(f"solution must be one of 1, 2, 3 here, got {solution!r}")


def attention_star_t(X: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """ATTENTION_*(Q, K, V)^t = v X X^t k^t q X (eq. 2.28), batched: X (S, N + M, M) -> (S, N + M, M)."""
    W = X.transpose(-1, -2) @ (k.T @ q) @ X  # (S, M, M), w_ji = X_j^t k^t q X_i
    return v @ X @ W


def read_out(w: LogicWeights, H: torch.Tensor) -> torch.Tensor:
    """Y (S, M) from H = ATTENTION_*^t + X (S, N + M, M), per the solution's form."""
    t = lambda a: torch.as_tensor(a, dtype=H.dtype, device=H.device)  # noqa: E731
    if w.form == "linear":
        Z = H
    elif w.form == "relu-B":
        Z = torch.relu(t(w.B) @ H + t(w.bias)[:, None])
    else:
        Z = torch.relu(H + t(w.bias)[:, None])
    return (t(w.C) @ Z)[..., 0, :]


def forward(w: LogicWeights, X: np.ndarray | torch.Tensor, *, device: str = "cpu") -> np.ndarray:
    """Y (S, M) of the one-level transformer on X (S, N + M, M), float64, in chunks of CHUNK."""
    t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=device)  # noqa: E731
    q, k, v = t(w.q), t(w.k), t(w.v)
    out = []
    for s in range(0, len(X), CHUNK):
        Xc = t(X[s:s + CHUNK])
        out.append(read_out(w, attention_star_t(Xc, q, k, v) + Xc).cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, w.M))


def attention_module(w: LogicWeights, *, device: str = "cpu"):
    """The weights in :class:`attnlab.nn.MultiHeadAttention` (one head, unnormalized, scale 1,
    no biases; tokens as rows): W_Q = q^t, W_K = k^t, W_V = v^t, W_O = I, so the module maps
    X^t to ATTENTION_*(Q, K, V) = (Q K^t) V."""
    from attnlab.nn.attention import MultiHeadAttention

    t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=device)  # noqa: E731
    d = w.N + w.M
    return MultiHeadAttention.from_full(t(w.q.T), t(w.k.T), t(w.v.T), torch.eye(d, dtype=torch.float64, device=device),
                                        n_heads=1, attention="unnormalized", scale="none").to(device)


def forward_module(w: LogicWeights, X: np.ndarray, *, device: str = "cpu") -> np.ndarray:
    """Y (S, M) computed with :func:`attention_module` for the attention and :func:`read_out`."""
    mod = attention_module(w, device=device)
    out = []
    with torch.no_grad():
        for s in range(0, len(X), CHUNK):
            Xc = torch.as_tensor(X[s:s + CHUNK], dtype=torch.float64, device=device)
            att_t = mod(Xc.transpose(-1, -2)).output.transpose(-1, -2)
            out.append(read_out(w, att_t + Xc).cpu().numpy())
    return np.concatenate(out)
