"""§3.3: attention whose bilinear form sees only the categories, read on the diagonal.

Model (§3.3, eq. 3.36): Q^t = (q 0; 0 0) X, K^t = (I_N 0; 0 0) X, V^t = (0 v) X with q
(N x N) on the categories and v (M x M) on the positions, ATTENTION_* = Q K^t V and the
prediction taken directly from its diagonal (no skip, no ReLU):

    Y_hat_i = sum_{j=1}^M v_ij q(X_j, X_i),       Y_i = q_true(X_{i-1}, X_i)   (i = 2..M)
    E[SSE]  = sum_{i=2}^M E (Y_i - Y_hat_i)^2

with X_1..X_M i.i.d. on {1..N} with probabilities p (uniform unless given) and q(r, t) the
(r, t) entry of q. (The text writes the sum to i, a causal mask that eq. 3.36 does not have,
and in SSE_i to N with q(X_i, X_j); the sum over all M positions of q(X_j, X_i) is what
eq. 3.36 computes. Row 1 of v has no target: it never moves.)

**The intended solutions.** v_{i(i-1)} = lambda, v_ii = mu, v_ij = 0 otherwise, and

    q(r, t) = (q_true(r, t) + a(t)) / lambda,   a(t) = -mu q_true(t, t) / (lambda + mu)

(lambda != 0, lambda + mu != 0): then Y_hat_i = lambda q(X_{i-1}, X_i) + mu q(X_i, X_i) and at
r = t the two terms give (lambda + mu) q(t, t) = q_true(t, t), so Y_hat_i = Y_i on every
input. The text's canonical one is lambda = 1, mu = 0, q = q_true; its second family (after
eq. 3.71) is lambda = 1, q = q_true + a(t) with a(t) = -v_ii q_true(t, t) / (1 + v_ii): exactly
this family (:func:`text_second_family`). (The line before eq. 3.71 prints
"q_true = a(t) + q", with q and q_true swapped; eq. 3.71, 0 = a(t) + v_ii q(t, t), and the
family after it follow from q = q_true + a(t), which eq. 3.55 gives.)

**Nondegeneracy.** The text's argument needs

    Delta Q = E[q(X_1, X_2)^2] - E[q(X_1, X_3) q(X_2, X_3)] = sum_t p_t Var_{r ~ p} q(r, t) != 0

(the same conditioning the text does in §3.3.1), i.e. some column of q varies with r. At an
intended solution Delta Q(q) = Delta Q(q_true) / lambda^2. For a degenerate q_true whose
columns are constant, q_true(r, t) = g(t) (the target ignores X_{i-1}), Delta Q(q_true) = 0
and §3.3.1's rejected case sum_{j != i} v_ij = 0 is a global minimum: v = I_M, q = q_true
gives Y_hat_i = g(X_i) = Y_i with v_{i(i-1)} = 0, so gradient descent has a continuum of
zero-loss points to end at and the argument, which "rejects" this case, does not apply.

**Extra stationary points.** As in §3.1 (gradients), v = 0 is stationary for every q in a
subspace of codimension 3: at v = 0 the q-gradient vanishes and
dE/dv_is = -2 E[Y_i q(X_s, X_i)], which is 0 for all i, s iff
E[q_true(X_1, X_2) q(X_1, X_2)] = E[q_true(X_1, X_2) q(X_2, X_2)] = sum_t p_t m_true(t) m(t) = 0
(m(t) = E_r q(r, t); the last for s != i - 1, i, which exists for M >= 3). E[SSE] = E[Y^2] there.

Shapes: B starts are batched, q (B, N, N), v (B, M, M); the expectation is exact, a weighted
sum over all N^M sequences (weights prod_i p_{X_i}). Float64 throughout.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from attnlab.errors import ConfigError
from attnlab.papers.logic.encoding import all_sequences, targets
from attnlab.runs.threads import num_threads

# initial step and steps of the descent. A fixed step of 0.1 (or 0.2) leaves some starts oscillating
# around a minimum with large |v_ii| at N = 3, M = 4 (E[SSE] stuck near 0.1 with gradient ~1), a fixed
# 0.02 leaves many on the plateau after 3000 steps: hence the backtracking step below.
LR, STEPS = 0.1, 2000


@dataclass(frozen=True)
class Population:
    """All N^M sequences with their probabilities and targets.

    tokens (S, M) ints; weights (S,) = prod_i p_{X_i}; Y (S, M) with Y[:, 0] = 0 (unused);
    pair (S, M, M): pair[s, j, i] = N X_j + X_i, the flat index of q(X_j, X_i)."""

    N: int
    M: int
    p: np.ndarray
    tokens: np.ndarray
    weights: np.ndarray
    Y: np.ndarray
    pair: np.ndarray


def population(q_true: np.ndarray, M: int, p: np.ndarray | None = None) -> Population:
    """The exact distribution of (X, Y) for q_true (N x N), length M, category probabilities p."""
    q_true = np.asarray(q_true, np.float64)
    if q_true.ndim != 2 or q_true.shape[0] != q_true.shape[1] or q_true.shape[0] < 2:
        raise ConfigError(f"q_true must be a square N x N table with N >= 2, got shape {q_true.shape}")
    if not isinstance(M, (int, np.integer)) or M < 3:
        raise ConfigError(f"M must be an integer >= 3, got {M!r}")
    N = q_true.shape[0]
    p = np.full(N, 1.0 / N) if p is None else np.asarray(p, np.float64)
    if p.shape != (N,) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-12:
        raise ConfigError(f"p must be N = {N} non-negative probabilities summing to 1")
    tokens = all_sequences(N, M)
    pair = tokens[:, :, None] * N + tokens[:, None, :]
    return Population(N, M, p, tokens, p[tokens].prod(axis=1), targets(tokens, q_true), pair)


def predict(q: torch.Tensor, v: torch.Tensor, pair: torch.Tensor) -> torch.Tensor:
    """Y_hat (B, S, M): Y_hat[b, s, i] = sum_j v[b, i, j] q[b][X_j, X_i]; q (B, N, N), v (B, M, M)."""
    Q = q.reshape(q.shape[0], -1)[:, pair]  # (B, S, M, M): Q[b, s, j, i] = q(X_j, X_i)
    return (Q * v.transpose(1, 2)[:, None]).sum(dim=2)


def expected_sse(q: torch.Tensor, v: torch.Tensor, pop: Population) -> torch.Tensor:
    """E[SSE] (B,) = sum_s w_s sum_{i>=2} (Y_i - Y_hat_i)^2 for q (B, N, N), v (B, M, M)."""
    t = lambda a: torch.as_tensor(a, device=q.device)  # noqa: E731
    err = t(pop.Y)[None, :, 1:] - predict(q, v, t(pop.pair))[..., 1:]
    return ((err ** 2).sum(dim=2) * t(pop.weights)[None]).sum(dim=1)


def _moments(pop: Population, device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(P, Y, w): P (S M M, N^2) the one-hot of pair, Y (S, M) with column 1 zeroed, w (S,)."""
    t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=device)  # noqa: E731
    P = torch.nn.functional.one_hot(torch.as_tensor(pop.pair.reshape(-1), device=device), pop.N ** 2).to(torch.float64)
    return P, t(pop.Y), t(pop.weights)


def batched_loss_gradient(q: torch.Tensor, v: torch.Tensor, P: torch.Tensor, Y: torch.Tensor,
                          w: torch.Tensor, grad: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(E (B,), dE/dq (B, N, N), dE/dv (B, M, M)) in closed form, for the descent loop.

    With Q[b, s, j, i] = q_b(X_j, X_i) and err = Y - Y_hat (rows i >= 2; row 1 masked):
        dE/dv_ij = -2 sum_s w_s err_si Q_sji,
        dE/dq(r, t) = -2 sum_s w_s sum_{i, j: X_j = r, X_i = t} err_si v_ij
    (the same as autograd of :func:`expected_sse`; tested). grad=False: E only."""
    B, M = v.shape[0], v.shape[1]
    S = Y.shape[0]
    Q = (q.reshape(B, -1) @ P.T).reshape(B, S, M, M)
    err = Y[None] - (Q * v.transpose(1, 2)[:, None]).sum(dim=2)
    err[..., 0] = 0.0
    we = err * w[None, :, None]
    E = (we * err).sum(dim=(1, 2))
    if not grad:
        return E, None, None
    gv = -2.0 * torch.einsum("bsi,bsji->bij", we, Q)
    coef = we[:, :, None, :] * v.transpose(1, 2)[:, None]  # (B, S, j, i): w_s err_si v_ij
    gq = -2.0 * (coef.reshape(B, -1) @ P).reshape(q.shape)
    return E, gq, gv


def loss_and_gradient(q: np.ndarray, v: np.ndarray, pop: Population) -> tuple[float, np.ndarray, np.ndarray]:
    """(E[SSE], dE/dq (N x N), dE/dv (M x M)) at one point, by autograd of the exact expectation."""
    qt = torch.tensor(np.asarray(q, np.float64)[None], requires_grad=True)
    vt = torch.tensor(np.asarray(v, np.float64)[None], requires_grad=True)
    E = expected_sse(qt, vt, pop)[0]
    gq, gv = torch.autograd.grad(E, (qt, vt))
    return E.item(), gq[0].numpy(), gv[0].numpy()


def intended(q_true: np.ndarray, M: int, lam: float = 1.0, mu: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) of the intended family (module docstring): v_{i(i-1)} = lam, v_ii = mu, and
    q(r, t) = (q_true(r, t) + a(t)) / lam with a(t) = -mu q_true(t, t) / (lam + mu). Row 1 of v: v_11 = mu."""
    q_true = np.asarray(q_true, np.float64)
    if lam == 0 or lam + mu == 0:
        raise ConfigError("the intended family needs lam != 0 and lam + mu != 0")
    a = -mu * np.diag(q_true) / (lam + mu)
    return (q_true + a[None, :]) / lam, lam * np.eye(M, k=-1) + mu * np.eye(M)


def text_second_family(q_true: np.ndarray, M: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """The text's second solution, as stated after eq. 3.71: v_{i(i-1)} = 1, v_ii = mu, v_ij = 0
    otherwise, q(r, t) = q_true(r, t) + a(t) with a(t) = -mu q_true(t, t) / (1 + mu) (mu != -1)."""
    q_true = np.asarray(q_true, np.float64)
    if 1.0 + mu == 0:
        raise ConfigError("the text's second family needs v_ii != -1")
    a = -mu * np.diag(q_true) / (1.0 + mu)
    return q_true + a[None, :], np.eye(M, k=-1) + mu * np.eye(M)


def swapped_reading(q_true: np.ndarray, M: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """The family the line before eq. 3.71 would give if read literally (q_true = a(t) + q, i.e.
    q = q_true - a(t)) with the same a(t): not exact for mu != 0 (kept to show the swap matters)."""
    q, v = text_second_family(q_true, M, mu)
    a = q[0] - np.asarray(q_true, np.float64)[0]
    return np.asarray(q_true, np.float64) - a[None, :], v


def delta_Q(q: np.ndarray, p: np.ndarray | None = None) -> float:
    """Delta Q = E[q(X_1, X_2)^2] - E[q(X_1, X_3) q(X_2, X_3)] = sum_t p_t Var_{r~p} q(r, t)."""
    q = np.asarray(q, np.float64)
    p = np.full(q.shape[0], 1.0 / q.shape[0]) if p is None else np.asarray(p, np.float64)
    m = p @ q  # m(t) = E_r q(r, t)
    return float(p @ (p @ (q - m[None, :]) ** 2))  # centred first: >= 0, and exactly 0 on constant columns


@dataclass(frozen=True)
class FamilyDistance:
    """How far one point (q, v) is from the intended family, after rescaling to lambda = 1."""

    lam: float  # lambda = mean_{i>=2} v_{i(i-1)}, the scale removed (q' = lambda q, v' = v / lambda)
    mu: float  # mu' = mean_{i>=2} v'_ii (nan when lambda = 0)
    off: float  # max |v'_ij| over i >= 2, j != i, i - 1
    spread: float  # max over i >= 2 of |v'_{i(i-1)} - 1| and |v'_ii - mu'|
    q_gap: float  # max |q' - q_family| with q_family the intended q at (1, mu')
    distance: float  # max(off, spread, q_gap)


def family_distance(q: np.ndarray, v: np.ndarray, q_true: np.ndarray) -> FamilyDistance:
    """How far (q, v) (N x N, M x M) is from the intended family, in the scale-free form.

    The scale q -> c q, v -> v / c leaves Y_hat unchanged, so with lambda = mean_{i>=2}
    v_{i(i-1)} the point is rescaled to lambda = 1: q' = lambda q, v' = v / lambda, mu' =
    mean_{i>=2} v'_ii; q_family comes from :func:`intended` at (1, mu')."""
    q, v = np.asarray(q, np.float64), np.asarray(v, np.float64)
    M = v.shape[0]
    i = np.arange(1, M)
    lam = float(v[i, i - 1].mean())
    if lam == 0:
        return FamilyDistance(lam=0.0, mu=float("nan"), off=float("inf"), spread=float("inf"), q_gap=float("inf"),
                              distance=float("inf"))
    qs, vs = lam * q, v / lam
    mu = float(vs[i, i].mean())
    mask = np.ones((M, M), bool)
    mask[0] = False
    mask[i, i] = mask[i, i - 1] = False
    off = float(np.abs(vs[mask]).max())
    spread = float(max(np.abs(vs[i, i - 1] - 1).max(), np.abs(vs[i, i] - mu).max()))
    q_gap = float(np.abs(qs - intended(q_true, M, 1.0, mu)[0]).max()) if 1 + mu != 0 else float("inf")
    return FamilyDistance(lam=lam, mu=mu, off=off, spread=spread, q_gap=q_gap, distance=max(off, spread, q_gap))


def degenerate_q_true(g: np.ndarray) -> np.ndarray:
    """q_true(r, t) = g(t): constant columns, Delta Q(q_true) = 0 (the target ignores X_{i-1})."""
    g = np.asarray(g, np.float64).ravel()
    return np.tile(g[None, :], (g.size, 1))


def degenerate_minimum(q_true: np.ndarray, M: int) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) = (q_true, I_M): zero loss iff q_true has constant columns; sum_{j != i} v_ij = 0 and
    v_{i(i-1)} = 0, the case §3.3.1 rejects."""
    return np.asarray(q_true, np.float64).copy(), np.eye(M)


def v_zero_stationary(pop: Population, q_true: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random q (N x N) with v = 0 stationary: q projected onto the null space of the three
    conditions of the module docstring (E[Y_i q(X_s, X_i)] = 0 for s = i - 1, s = i, and other s)."""
    q_true = np.asarray(q_true, np.float64)
    N, p = q_true.shape[0], pop.p
    P = np.outer(p, p)
    A = np.stack([(P * q_true).ravel(),                                          # E[q_true(r,t) q(r,t)]
                  np.diag(p * (p @ q_true)).ravel(),                             # E[q_true(X1,t) q(t,t)]
                  np.outer(p, p * (p @ q_true)).ravel()])                        # sum_t p_t m_true(t) m(t)
    x = rng.standard_normal(N * N)
    x -= A.T @ np.linalg.lstsq(A @ A.T, A @ x, rcond=None)[0]
    return x.reshape(N, N)


@dataclass(frozen=True)
class CategoryDescent:
    """Gradient descent from B random starts (:func:`descend`; lr: the initial step): q (B, N, N), v (B, M, M) end
    points, loss (B,) E[SSE] there, distance (B,) :func:`family_distance`, delta_Q (B,) of the
    learned q, off (B,) the largest |v'_ij|, j != i, i - 1, after rescaling to lambda = 1."""

    lr: float
    steps: int
    q: np.ndarray
    v: np.ndarray
    loss: np.ndarray
    distance: np.ndarray
    delta_Q: np.ndarray
    off: np.ndarray


@functools.lru_cache(maxsize=8)
def _descend_cached(q_true_key: tuple, M: int, starts: int, seed: int, lr: float, steps: int,
                    device: str) -> CategoryDescent:
    q_true = np.array(q_true_key, np.float64)
    N = q_true.shape[0]
    pop = population(q_true, M)
    g = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn(starts, N, N, generator=g, dtype=torch.float64).to(device).requires_grad_()
    v = (torch.randn(starts, M, M, generator=g, dtype=torch.float64) / np.sqrt(M)).to(device).requires_grad_()
    P, Y, w = _moments(pop, device)
    q, v = q.detach(), v.detach()
    step = torch.full((starts, 1, 1), lr, dtype=torch.float64, device=device)
    for _ in range(steps):
        E, gq, gv = batched_loss_gradient(q, v, P, Y, w)
        # Armijo backtracking, per start: accept the step if E drops by >= step |g|^2 / 2,
        # then try a 1.5x longer one next time; else keep the point and halve the step.
        tq, tv = q - step * gq, v - step * gv
        gg = (gq ** 2).sum(dim=(1, 2)) + (gv ** 2).sum(dim=(1, 2))
        ok = (batched_loss_gradient(tq, tv, P, Y, w, grad=False)[0] <= E - 0.5 * step[:, 0, 0] * gg)[:, None, None]
        q, v = torch.where(ok, tq, q), torch.where(ok, tv, v)
        step = torch.where(ok, step * 1.5, step * 0.5)
    with torch.no_grad():
        E = expected_sse(q, v, pop).cpu().numpy()
    qn, vn = q.detach().cpu().numpy(), v.detach().cpu().numpy()
    fam = [family_distance(qn[b], vn[b], q_true) for b in range(starts)]
    return CategoryDescent(lr, steps, qn, vn, E, np.array([f.distance for f in fam]),
                           np.array([delta_Q(qn[b], pop.p) for b in range(starts)]), np.array([f.off for f in fam]))


def descend(q_true: np.ndarray, M: int, starts: int, seed: int, *, lr: float = LR, steps: int = STEPS,
            device: str = "cpu") -> CategoryDescent:
    """Gradient descent on (q, v) from ``starts`` random starts batched in one tensor (uniform
    categories). Starts: q_rt ~ N(0, 1), v_ij ~ N(0, 1/M) (torch generator seeded with ``seed``).
    Each step: (q, v) -= h_b (dE/dq, dE/dv) with the exact gradient (:func:`batched_loss_gradient`)
    and a per-start step h_b (initially lr) chosen by Armijo backtracking: the step is taken iff
    E drops by at least h_b |grad|^2 / 2, and h_b then grows 1.5x, else it halves. Every accepted
    step lowers E, so a start cannot oscillate. One torch thread; cached per arguments."""
    q_true = np.asarray(q_true, np.float64)
    if starts < 1 or steps < 1 or not lr > 0:
        raise ConfigError(f"need starts >= 1, steps >= 1, lr > 0; got {starts}, {steps}, {lr}")
    population(q_true, M)  # validates
    with num_threads(1):  # tiny tensors: one thread is faster and bit-reproducible
        return _descend_cached(tuple(map(tuple, q_true)), M, starts, seed, float(lr), int(steps), device)
