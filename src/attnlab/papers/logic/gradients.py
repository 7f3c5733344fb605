"""§3.1: the expected squared error of attention on positions only, its gradient and its zeros.

Model (eq. 3.1-3.3): self-attention without softmax whose bilinear form sees only the
positions (k = (0, I), query block q: M x M) and whose value map sees only the categories
(v: N x N); the target of column i is the previous category, so with one-hot X_1..X_M
(categories only, i.i.d. uniform over N)

    E[SSE] = sum_{i=2}^M E || X_{i-1} - v sum_{j=1}^M q_ji X_j ||^2 .

(The text sums from i = 1, where X_0 does not exist; column 1 of q then enters nothing and
its gradient is 0. Eq. 3.3 also stops the inner sum at X_i while eq. 3.2 runs to X_M; the
sum to M is the model of eq. 3.1.)

Closed form (eq. 3.6-3.8, 3.18), with b = 1^t v 1 / N^2, t_1 = Tr(v)/N, a = 1^t v^t v 1 / N^2,
t_2 = Tr(v^t v)/N, Q_i = sum_j q_ji, R_i = sum_j q_ji^2, r_k = (v 1)_k:

    dE/dq_ji = -2 [ (t_1 if j = i-1 else b) - a Q_i - q_ji (t_2 - a) ]                     (i >= 2)
    dE/dv_kl = -2 sum_{i>=2} [ Q_i / N^2 + q_{(i-1)i} (delta_kl / N - 1/N^2)
                               - Q_i^2 r_k / N^2 - R_i (v_kl / N - r_k / N^2) ]

The text writes the bracket alone as "dE[SSE]/dq_ji" (and likewise for v): -1/2 of the
derivative, the direction descent moves, with the same zeros. attnlab reads the text's
expressions up to that constant factor (a convention, not an error: the ledger entry
logic.gradient-q says so) and checks -2 times them against autograd of the exact
expectation (the average over all N^M sequences) in float64.

Stationary points (eq. 3.23-3.34). The text finds, besides the wanted family
v = lambda I, q_{(i-1)i} = 1/lambda, q_ji = 0 otherwise (E[SSE] = 0), only the degenerate
q = v = 0. Its derivation divides by sum_i sum_j q_ji^2 (eq. 3.23) and by Delta v (eq. 3.26),
so it misses two larger degenerate sets, which the formulas above show stationary:
  * q = 0 and any v with Tr v = 0 and 1^t v 1 = 0 (the q-gradient is -2 t_1 or -2 b);
  * v = 0 and any q with sum_i q_{(i-1)i} = 0 and sum_{i>=2} Q_i = 0 (the v-gradient is
    -2 [sum_i Q_i / N^2 + sum_i q_{(i-1)i} (delta_kl/N - 1/N^2)]).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.papers.logic.encoding import all_sequences


def closed_form_gradient(q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dE/dq (M x M), dE/dv (N x N)) from the formulas in the module docstring."""
    q, v = np.asarray(q, np.float64), np.asarray(v, np.float64)
    M, N = q.shape[0], v.shape[0]
    one = np.ones(N)
    b, t1 = one @ v @ one / N ** 2, np.trace(v) / N
    a, t2 = one @ v.T @ v @ one / N ** 2, np.trace(v.T @ v) / N
    Q, R, r = q.sum(0), (q ** 2).sum(0), v @ one
    gq = np.zeros((M, M))
    for i in range(1, M):
        e = np.full(M, b)
        e[i - 1] = t1
        gq[:, i] = -2.0 * (e - a * Q[i] - q[:, i] * (t2 - a))
    gv = np.zeros((N, N))
    eye = np.eye(N)
    for i in range(1, M):
        gv += -2.0 * (Q[i] / N ** 2 + q[i - 1, i] * (eye / N - 1 / N ** 2) - Q[i] ** 2 * r[:, None] / N ** 2
                      - R[i] * (v / N - r[:, None] / N ** 2))
    return gq, gv


def expected_sse(q: torch.Tensor, v: torch.Tensor, XC: torch.Tensor) -> torch.Tensor:
    """E[SSE] as the average over the sequences XC (S, N, M) (all N^M of them: exact)."""
    pred = v @ XC @ q  # column i = v sum_j q_ji X_j
    err = XC[:, :, :-1] - pred[:, :, 1:]
    return (err ** 2).sum(dim=(1, 2)).mean()


def one_hot_categories(N: int, M: int) -> torch.Tensor:
    """X_C for every one of the N^M sequences, (N^M, N, M) float64."""
    t = torch.as_tensor(all_sequences(N, M))
    return torch.nn.functional.one_hot(t, N).transpose(1, 2).to(torch.float64)


def autograd_gradient(q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(dE/dq, dE/dv, E[SSE]) by autograd of the exact expectation."""
    qt = torch.tensor(q, dtype=torch.float64, requires_grad=True)
    vt = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    E = expected_sse(qt, vt, one_hot_categories(v.shape[0], q.shape[0]))
    E.backward()
    return qt.grad.numpy(), vt.grad.numpy(), E.item()


def stationary_points(N: int, M: int, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Representatives of the stationary sets (module docstring): name -> (q, v)."""
    lam = float(rng.uniform(0.5, 2.0))
    shift = np.eye(M, k=1)  # q_{(i-1)i} = 1
    v_free = rng.standard_normal((N, N))
    v_free -= np.eye(N) * np.trace(v_free) / N  # Tr v = 0
    off = np.ones((N, N)) - np.eye(N)
    v_free -= off * (v_free.sum() / off.sum())  # 1^t v 1 = 0, the trace kept
    q_free = rng.standard_normal((M, M))
    q_free[:, 0] = 0.0
    q_free[np.arange(M - 1), np.arange(1, M)] -= q_free[np.arange(M - 1), np.arange(1, M)].mean()
    offd = np.ones((M, M)) - shift
    offd[:, 0] = 0.0
    q_free -= offd * (q_free[:, 1:].sum() / offd.sum())  # sum_{i>=2} Q_i = 0, the shifted diagonal kept
    return {"solution": (shift / lam, lam * np.eye(N)), "zero": (np.zeros((M, M)), np.zeros((N, N))),
            "q=0, Tr v = 1^t v 1 = 0": (np.zeros((M, M)), v_free),
            "v=0, sum q_(i-1)i = sum Q_i = 0": (q_free, np.zeros((N, N)))}


EQ39_CHUNK = 250  # draws held at once by eq39_terms


def eq39_terms(N: int, sigma: float, draws: int, rng: np.random.Generator) -> tuple[float, float]:
    """(E|blue|, E|red|): the two terms of eq. 3.9 at initialisation, over ``draws`` draws of
    v (N x N) and of two entries q_(i-1)i, q_ji of q, all i.i.d. N(0, sigma^2) (q and v at the
    same scale):

        blue = Tr(v^t)/N - 1^t v^t 1 / N^2                                        (it lifts q_(i-1)i)
        red  = (q_(i-1)i - q_ji) (Tr(v^t v)/N - 1^t v^t v 1 / N^2)               (it pushes it down)

    Exactly, E|blue| = sigma sqrt(2/pi) sqrt(N - 1) / N and E|red| = (2 sigma / sqrt(pi)) sigma^2 (N - 1)
    (:func:`eq39_ratio`). The text compares only 3.12 (Tr(v^t)/N) with 3.10 (Tr(v^t v)/N), without the
    red term's factor (q_(i-1)i - q_ji), itself O(sigma) at initialisation."""
    blue, red = [], []
    for start in range(0, draws, EQ39_CHUNK):  # (chunk, N, N) at a time: N = 100 and 2000 draws would hold 160 MB
        n = min(EQ39_CHUNK, draws - start)
        v = rng.standard_normal((n, N, N)) * sigma
        q = rng.standard_normal((n, 2)) * sigma
        blue.append(np.trace(v, axis1=1, axis2=2) / N - v.sum(axis=(1, 2)) / N ** 2)
        red.append((q[:, 0] - q[:, 1]) * ((v ** 2).sum(axis=(1, 2)) / N - (v.sum(axis=2) ** 2).sum(axis=1) / N ** 2))
    return float(np.abs(np.concatenate(blue)).mean()), float(np.abs(np.concatenate(red)).mean())


def eq39_ratio(N: int, sigma: float) -> float:
    """E|blue| / E|red| of :func:`eq39_terms`, exactly: 1 / (sqrt 2 sigma^2 N sqrt(N - 1)).

    The blue term dominates iff sigma << N^(-3/4): at sigma = 1/sqrt(P) (P parameters, P >= N^2) the
    ratio is P / (sqrt 2 N sqrt(N - 1)) >= N / sqrt(2 (N - 1)) > 1; at sigma = N^(-3/4), an order below
    N^(-1/2), it is sqrt(N / (N - 1)) / sqrt 2 < 1 for every N >= 3."""
    return 1.0 / (np.sqrt(2.0) * sigma ** 2 * N * np.sqrt(N - 1.0))
