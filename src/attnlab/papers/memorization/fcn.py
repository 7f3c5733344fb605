"""Proposition 3 of memorization-capacity-of-mha: what a two-layer ReLU network can memorize.

memorization-capacity-of-mha §4.3 and Appendix F. The network (App. F) is

    f_{d_1, m, d_out}(x; W_1, b_1, W_2, b_2) = W_2^T ReLU(W_1^T x + b_1) + b_2

with x in R^{d_1}, m hidden units and d_out outputs, so W_1: (d_1, m), b_1: (m,),
W_2: (m, d_out), b_2: (d_out,). Its parameter count is (d_1 + 1) m + (m + 1) d_out.

Proposition 3: on the flattened inputs x_FCN^(t) = [e_1^(t); ...; e_n^(t); e^(t)]
(R^{(n+1) d}) of data sets satisfying Assumptions 1 and 2, such a network memorizes
at most T <= (n + 1) m / d_out + m + 1 examples.

The proof's reduction (App. F), as code here:
- eq. (29): x^(t) in R^n in general position; E^(t) = [s_1^T; ...; s_n^T] (the first n
  standard basis rows of R^d) and e^(t) = [0_{d-n}; x^(t)], so that
  x_FCN^(t) = [c_FCN; x^(t)] with c_FCN = [s_1; ...; s_n; 0_{d-n}] in R^{(n+1)d-n};
- any network f_{(n+1)d, m, d_out} on x_FCN equals a network f_{n, m, d_out} on x:
  W_1 = W'_1[(n+1)d-n:, :], b_1 = b'_1 + W'_1[:(n+1)d-n, :]^T c_FCN, W_2 = W'_2, b_2 = b'_2;
- f_{n, m, d_out} has (n+1) m + (m+1) d_out parameters, so for T d_out above that count
  almost every label set is out of its reach (its outputs on T points form a set of
  measure zero in R^{T d_out}).

Typos in Appendix F, implemented as the mathematics requires:
- "W_1 in R^{d_2 x d_1}, W_2 in R^{d_out x d_2}" does not fit W_1^T x and W_2^T ReLU(.):
  with x in R^{d_1} the shapes are W_1: (d_1, d_2) and W_2: (d_2, d_out) (used here).
- The weight map slices W'_1 (m x (n+1)d) by columns and then transposes the slice,
  W'_1[:, 1:(n+1)d-n]^T c_FCN, which does not type-check; in the orientation above the
  slice is by rows, W'_1[:(n+1)d-n, :]^T c_FCN (m).
- The map writes b_1 := b'_1 - W'_1[...]^T c_FCN; the identity f_{(n+1)d}(x_FCN) = f_n(x)
  needs a PLUS: W'_1^T x_FCN + b'_1 = W'_1[:(n+1)d-n]^T c_FCN + W_1^T x + b'_1.
  (The minus sign is the inverse map, f_n -> f_{(n+1)d}.) :func:`reduce_weights` takes a
  ``sign`` so the claim can show the paper's sign fails the identity.

A sharper count (ours, not the paper's): ReLU is positively homogeneous, so hidden unit j
is unchanged under (w_j, b_j, a_j) -> (c w_j, c b_j, a_j / c) for any c > 0 (a_j the j-th
row of W_2). The outputs on T points therefore depend on at most
n m + m d_out + d_out parameters (each (w_j, b_j) only through a point of the sphere S^n),
and the same measure-zero argument gives T <= n m / d_out + m + 1: the paper's bound is
valid but loose by m / d_out. :func:`output_jacobian_rank` measures that rank.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import torch
from torch import Tensor

from attnlab.analysis.kruskal import kruskal_rank
from attnlab.config import check_int
from attnlab.errors import ConfigError
from attnlab.papers.memorization.assumptions import assumption2_holds
from attnlab.papers.memorization.model import attention_classifier, init_attention_classifier
from attnlab.runs.threads import num_threads
from attnlab.training import train_batched

Params = dict[str, Tensor]


def _check_ints(**values: int) -> None:
    for name, v in values.items():
        check_int(name, v, 1)


# --- the network and its size -------------------------------------------------------

def fcn_forward(params: Params, x: Tensor) -> Tensor:
    """f(x) = W_2^T ReLU(W_1^T x + b_1) + b_2 for every row of x (App. F).

    params: W_1 (d_1, m), b_1 (m,), W_2 (m, d_out), b_2 (d_out,); x: (T, d_1) -> (T, d_out)."""
    hidden = torch.relu(x @ params["W_1"] + params["b_1"])  # rows (W_1^T x + b_1)^T: (T, m)
    return hidden @ params["W_2"] + params["b_2"]  # (T, m) @ (m, d_out) -> (T, d_out)


def fcn_parameter_count(d_1: int, m: int, d_out: int) -> int:
    """(d_1 + 1) m + (m + 1) d_out: W_1, b_1, W_2, b_2 of f_{d_1, m, d_out}."""
    _check_ints(d_1=d_1, m=m, d_out=d_out)
    return (d_1 + 1) * m + (m + 1) * d_out


def attention_parameter_count(H: int, d: int, d_h: int, d_v: int, d_out: int) -> int:
    """2 H d d_h + H d d_v + H d_v d + d d_out: W_K, W_Q, W_V, W_O, W_D of eqs. (1)-(6).

    The text after Theorem 1 counts 2 H d d_h + H d d_v + d d_out, leaving out W_O
    (H d_v x d); every one of the five matrices is trained, so all are counted here."""
    _check_ints(H=H, d=d, d_h=d_h, d_v=d_v, d_out=d_out)
    return 2 * H * d * d_h + H * d * d_v + H * d_v * d + d * d_out


def matched_hidden_width(H: int, d: int, n: int, d_h: int, d_v: int, d_out: int) -> int:
    """The largest m whose f_{(n+1)d, m, d_out} has no more trainable parameters than the
    attention layer of eqs. (1)-(6) with (H, d, d_h, d_v, d_out).

    We match the total count of trained parameters (both models are trained with all of
    them, and the trivial memorization bound of App. F counts exactly those), rounding
    down so the FCN never gets more. §4.3 matches only orders (m = Theta(H))."""
    _check_ints(n=n)
    P = attention_parameter_count(H, d, d_h, d_v, d_out)
    m = (P - d_out) // ((n + 1) * d + 1 + d_out)  # (d_1 + 1) m + (m + 1) d_out <= P
    if m < 1:
        raise ConfigError(f"the attention layer has {P} parameters, fewer than an FCN with one hidden unit on "
                          f"(n+1)d = {(n + 1) * d} inputs: raise H, d_h or d_v")
    return m


def proposition3_bound(n: int, m: int, d_out: int) -> float:
    """(n + 1) m / d_out + m + 1: Proposition 3's largest T an f_{(n+1)d, m, d_out} can memorize."""
    _check_ints(n=n, m=m, d_out=d_out)
    return (n + 1) * m / d_out + m + 1


def homogeneity_bound(n: int, m: int, d_out: int) -> float:
    """n m / d_out + m + 1: the same argument with the m scaling symmetries of ReLU removed
    (module docstring); at most :func:`proposition3_bound`, and smaller by m / d_out."""
    _check_ints(n=n, m=m, d_out=d_out)
    return n * m / d_out + m + 1


def max_examples(bound: float) -> int:
    """The largest integer T <= bound (guarding the float division against round-off)."""
    return int(math.floor(bound + 1e-9))


# --- the proof's reduction (eq. (29) and the weight map) --------------------------------

def extended_dataset(x: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """eq. (29): x (T, n) -> (E, e, x_FCN, c_FCN).

    E (n, d): rows s_1^T..s_n^T, the first n standard basis rows (shared by all t);
    e (T, d): e^(t) = [0_{d-n}; x^(t)]; c_FCN = [s_1; ...; s_n; 0_{d-n}] ((n+1)d - n);
    x_FCN (T, (n+1)d) = [e_1; ...; e_n; e^(t)] = [c_FCN; x^(t)]."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ConfigError(f"x must be a (T, n) array, got shape {x.shape}")
    T, n = x.shape
    if not n < d:
        raise ConfigError(f"the paper needs n < d: got n = {n}, d = {d}; raise d")
    E = np.eye(n, d)  # (n, d)
    e = np.concatenate([np.zeros((T, d - n)), x], axis=1)  # (T, d)
    x_FCN = np.concatenate([np.broadcast_to(E.reshape(-1), (T, n * d)), e], axis=1)  # (T, (n+1)d)
    c_FCN = np.concatenate([E.reshape(-1), np.zeros(d - n)])  # ((n+1)d - n,)
    return E, e, x_FCN, c_FCN


def draw_eq29_dataset(T: int, n: int, d: int, d_out: int, seed: int) -> tuple[np.ndarray, ...]:
    """eq. (29)'s data set with random points and labels: x^(t) ~ N(0, I_n), y^(t) ~ N(0, I_{d_out})
    (one generator seeded with [seed, T], x drawn before y) -> (E (n, d), e (T, d), x_FCN (T, (n+1)d),
    y (T, d_out)); see :func:`extended_dataset`."""
    _check_ints(T=T, n=n, d=d, d_out=d_out)
    rng = np.random.default_rng([seed, T])
    x, y = rng.standard_normal((T, n)), rng.standard_normal((T, d_out))
    E, e, x_FCN, _ = extended_dataset(x, d)
    return E, e, x_FCN, y


def reduce_weights(params: Params, c_FCN: Tensor, *, sign: float = 1.0) -> Params:
    """App. F's map from f_{(n+1)d, m, d_out} (W'_1: ((n+1)d, m)) to f_{n, m, d_out}:
    W_1 = W'_1[(n+1)d-n:], b_1 = b'_1 + sign W'_1[:(n+1)d-n]^T c_FCN, W_2 = W'_2, b_2 = b'_2.
    sign = +1 is right; sign = -1 is the paper's printed map (see the module docstring)."""
    k = c_FCN.shape[0]  # (n+1)d - n rows of W'_1 see the constant part of x_FCN
    W_1p = params["W_1"]
    return {"W_1": W_1p[k:], "b_1": params["b_1"] + sign * (c_FCN @ W_1p[:k]),  # (k,) @ (k, m) -> (m,)
            "W_2": params["W_2"], "b_2": params["b_2"]}


def init_fcn(d_1: int, m: int, d_out: int, generator: torch.Generator, M: int | None = None) -> Params:
    """W_1 ~ N(0, 1/d_1), b_1 ~ N(0, 1), W_2 ~ N(0, 1/m), b_2 = 0, float64; with M, a stack (M, ...)."""
    _check_ints(d_1=d_1, m=m, d_out=d_out)
    lead = () if M is None else (M,)
    kw = dict(generator=generator, dtype=torch.float64)
    return {"W_1": torch.randn(*lead, d_1, m, **kw) / math.sqrt(d_1), "b_1": torch.randn(*lead, m, **kw),
            "W_2": torch.randn(*lead, m, d_out, **kw) / math.sqrt(m), "b_2": torch.zeros(*lead, d_out, dtype=torch.float64)}


def kink_through_data(W_1: Tensor, x: Tensor, generator: torch.Generator) -> Tensor:
    """b_1 with the kink of every hidden unit through a random data point, b_1j = -w_j^T x^(t_j):
    each unit starts active on part of the data and inactive on the rest. (With b_1 ~ N(0, 1)
    and inputs like eq. (29)'s, whose (n+1)d coordinates are mostly constant, W_1^T x barely
    varies over the data and each unit starts active on all of it or on none: L-BFGS then
    stalls far from the limit.) W_1: (..., d_1, m), x: (T, d_1) -> b_1 (..., m)."""
    idx = torch.randint(0, x.shape[0], W_1.shape[:-2] + W_1.shape[-1:], generator=generator)  # (..., m)
    pre = torch.einsum("td,...dm->...tm", x, W_1)  # W_1^T x^(t) for every unit: (..., T, m)
    return -pre.gather(-2, idx.unsqueeze(-2)).squeeze(-2)  # (..., m)


def check_reduction(T: int, n: int, d: int, m: int, d_out: int, seed: int) -> dict:
    """Draw x (T, n) ~ N(0, I), build eq. (29)'s data set and a random f_{(n+1)d, m, d_out};
    measure max |f_{(n+1)d}(x_FCN) - f_n(x)| for the right map and for the paper's printed
    sign, and check Assumptions 1 (Kruskal rank of e >= n) and 2 (rank E = n)."""
    _check_ints(T=T, n=n, d=d, m=m, d_out=d_out)
    x = np.random.default_rng(seed).standard_normal((T, n))
    E, e, x_FCN, c_FCN = extended_dataset(x, d)
    big = init_fcn((n + 1) * d, m, d_out, torch.Generator().manual_seed(seed))
    big["b_2"] = torch.randn(d_out, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    y_big = fcn_forward(big, torch.from_numpy(x_FCN))
    c, xt = torch.from_numpy(c_FCN), torch.from_numpy(x)
    err = (y_big - fcn_forward(reduce_weights(big, c), xt)).abs().max().item()
    err_paper = (y_big - fcn_forward(reduce_weights(big, c, sign=-1.0), xt)).abs().max().item()
    K = kruskal_rank(e)
    return {"T": T, "n": n, "d": d, "m": m, "d_out": d_out, "max_abs_error": err,
            "max_abs_error_paper_sign": err_paper, "output_scale": y_big.abs().max().item(),
            "kruskal_rank_queries": K, "assumption1": K >= n, "assumption2": assumption2_holds(E),
            "rank_E": int(np.linalg.matrix_rank(E))}


# --- how many directions the outputs can move in ----------------------------------------

def output_jacobian_rank(params: Params, x: Tensor, rtol: float = 1e-10) -> int:
    """rank of d f(x^(1..T)) / d(W_1, b_1, W_2, b_2) (T d_out x parameter count), singular
    values above rtol * sigma_1. At most n m + m d_out + d_out (module docstring)."""
    names = list(params)

    def outputs(*flat):
        return fcn_forward(dict(zip(names, flat)), x).reshape(-1)  # (T d_out,)

    J = torch.autograd.functional.jacobian(outputs, tuple(params[k] for k in names))
    J = torch.cat([j.reshape(j.shape[0], -1) for j in J], dim=1)  # (T d_out, P)
    s = torch.linalg.svdvals(J)
    return int((s > rtol * s[0]).sum())


@contextmanager
def one_thread():
    """Small float64 problems: one intra-op thread (the machine is shared; threads only add overhead)."""
    with num_threads(1):
        yield


# --- training to the limit (full batch, float64, L-BFGS, several restarts) --------------

def relative_residual(y_hat: Tensor, y: Tensor) -> float:
    """||y_hat - y||_F / ||y||_F over the whole data set."""
    return ((y_hat - y).norm() / y.norm()).item()


def _lbfgs_settings(steps: int) -> dict:
    # tolerances near float64 round-off, so a run stops at a true limit, not at torch's defaults (1e-7)
    return dict(optimizer="lbfgs", steps=steps, eval_every=steps, lbfgs_max_iter=50, lbfgs_history=50,
                lbfgs_tolerance_grad=1e-15, lbfgs_tolerance_change=1e-18)


def _mse(y_hat: Tensor, y: Tensor) -> Tensor:
    return ((y_hat - y) ** 2).mean()


def output_layer(params: Params, x: Tensor, y: Tensor, ridge: float = 0.0) -> Params:
    """(W_2, b_2) minimizing ||W_2^T ReLU(W_1^T x + b_1) + b_2 - y|| for the given (W_1, b_1):
    linear least squares on the features Phi = [ReLU(x W_1 + b_1), 1] (T, m + 1); with
    ridge > 0, (Phi^T Phi + ridge tr(Phi^T Phi)/(m+1) I)^{-1} Phi^T y (differentiable)."""
    hidden = torch.relu(x @ params["W_1"] + params["b_1"])  # (T, m)
    Phi = torch.cat([hidden, torch.ones_like(hidden[:, :1])], dim=1)  # (T, m + 1)
    if ridge > 0:
        G = Phi.T @ Phi  # (m + 1, m + 1)
        lam = ridge * torch.diagonal(G).mean()
        beta = torch.linalg.solve(G + lam * torch.eye(G.shape[0], dtype=G.dtype), Phi.T @ y)  # (m + 1, d_out)
    else:
        beta = torch.linalg.lstsq(Phi, y, driver="gelsd").solution  # minimum-norm least squares
    return {"W_1": params["W_1"], "b_1": params["b_1"], "W_2": beta[:-1], "b_2": beta[-1]}


def _projected_loss(params: Params, x: Tensor, y: Tensor) -> Tensor:
    # variable projection: the loss of (W_1, b_1) with the output layer solved exactly
    return _mse(fcn_forward(output_layer(params, x, y, ridge=RIDGE), x), y)


RIDGE = 1e-12  # relative ridge of the inner solve during training (the final solve has none)


def train_fcn(x: Tensor, y: Tensor, m: int, *, restarts: int, steps: int, seed: int) -> dict:
    """Fit f_{d_1, m, d_out} to (x (T, d_1), y (T, d_out)) from ``restarts`` random inits,
    full batch, float64, mean squared error.

    Variable projection: (W_2, b_2) is linear least squares given (W_1, b_1) (output_layer),
    so L-BFGS (attnlab.training, ``steps`` x 50 iterations) moves only (W_1, b_1) on the
    projected loss, then the output layer is solved exactly. Init: init_fcn with the
    kinks through data points (kink_through_data). Plain L-BFGS on all four matrices
    stalled at T = 9 with m = 7, n = 3 (29 effective parameters): best of 4 restarts at
    relative residual 0.10 and 0.12 for two of three data sets; the projected problem
    reached 1e-10 or below on all three.
    -> best relative residual, every restart's residual, and the best parameters."""
    _check_ints(m=m, restarts=restarts, steps=steps)
    x, y = x.to(torch.float64), y.to(torch.float64)
    gen = torch.Generator().manual_seed(seed)
    params = init_fcn(x.shape[1], m, y.shape[1], gen, M=restarts)
    inner = {"W_1": params["W_1"], "b_1": kink_through_data(params["W_1"], x, gen)}
    with one_thread():
        result = train_batched(_projected_loss, inner, (x, y), shared_data=True, **_lbfgs_settings(steps))
        fitted = {k: torch.stack(v) for k, v in zip(
            ("W_1", "b_1", "W_2", "b_2"),
            zip(*[output_layer(_pick(result.params, r), x, y).values() for r in range(restarts)]))}
    return _best(fitted, [relative_residual(fcn_forward(_pick(fitted, r), x), y) for r in range(restarts)])


def train_attention(E: Tensor, e: Tensor, y: Tensor, *, H: int, d_h: int, d_v: int, restarts: int, steps: int,
                    seed: int, init_scale: float = 1.0) -> dict:
    """Fit eqs. (1)-(6) (:func:`attnlab.papers.memorization.model.attention_classifier`, regression:
    d_out = y.shape[1]) to (E (n, d) shared, e (T, d), y (T, d_out)) as :func:`train_fcn` does.
    init_scale multiplies W_Q (the logit scale of the initial softmax)."""
    _check_ints(H=H, d_h=d_h, d_v=d_v, restarts=restarts, steps=steps)
    E, e, y = E.to(torch.float64), e.to(torch.float64), y.to(torch.float64)
    gen = torch.Generator().manual_seed(seed)
    params = init_attention_classifier(restarts, e.shape[1], E.shape[-2], H, d_h, y.shape[1], gen, d_v=d_v,
                                       dtype=torch.float64)
    params["W_Q"] = params["W_Q"] * init_scale
    Es = E.expand(restarts, *E.shape)  # one shared context per restart: (M, n, d)
    with one_thread():
        result = train_batched(lambda p, Em, eb, yb: _mse(attention_classifier(p, Em, eb), yb), params, (e, y),
                               model_data=(Es,), shared_data=True, **_lbfgs_settings(steps))
    return _best(result.params, [relative_residual(attention_classifier(_pick(result.params, r), E, e), y)
                                 for r in range(restarts)])


def _pick(stacked: Params, r: int) -> Params:
    return {k: v[r] for k, v in stacked.items()}


def _best(stacked: Params, residuals: list[float]) -> dict:
    r = int(np.argmin(residuals))
    return {"residual": residuals[r], "residuals": residuals, "params": _pick(stacked, r)}
