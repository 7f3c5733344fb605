"""Which mechanism a trained model of §4 uses: structure fractions of k^t q, v, B, path ablations and
component ablations.

**Structure fraction.** A structure s is a linear subspace S of d x d matrices: a block mask
(entries free inside, zero outside) plus optional fixed directions E_1..E_r (e.g. "A_PP is a
multiple of D_{-1}"). The output of the model does not see a gauge subspace G
(:mod:`~attnlab.papers.logic.model`: A + g w^t + w' g^t; v + u g^t, and v + 1_d u^t under the
LayerNorm, with g = (1_N; -1_M)). So the fraction of the Frobenius norm of A that lies in S is
measured modulo G:

    frac_s(A) = 1 - min_{Z in S, Gamma in G} ||A - Z - Gamma||_F^2 / min_{Gamma in G} ||A - Gamma||_F^2

(1: A is, up to the gauge, in S; 0: orthogonal to it). The denominator is ||P_out A P_in||_F^2
with P = I - g g^t / |g|^2 (and P_out = I - 1 1^t / d for v under the LayerNorm); the numerator is
a least-squares problem over the gauge and the E's, on the entries outside the mask.

Structures (the hand-built weights of :mod:`~attnlab.papers.logic.solutions` have fraction 1 in
their own; tests):

    A = k^t q   CC block (solution 2), PP block (solutions 1, 3), multiple of diag(0, D_{-1}) (1, 3)
    v           PP block (2), multiple of diag(0, S) (2), CC block (1, 3), multiple of diag(I_N, 0) (1)
    B           diagonal of its first d rows ("no B": solutions 2, 3); no gauge

**Path ablations** keep one path of the attention: A and v replaced by their in-structure parts
Z of the gauge representative nearest to the structure (the minimiser above), everything else
as trained. Reported as R^2 = 1 - MSE / Var(Y) on fresh sequences:

    full                    the model as trained
    no attention            H = X
    solution-2 path only    A -> its CC part, v -> its PP part
    solution-1/3 path only  A -> its PP part, v -> its CC part
    linear feed-forward     ReLU -> identity

**Component ablations** (:func:`ablated_predict`, :data:`ABLATIONS`) answer the text's question
"which part does the logic" without the gauge: each replaces one quantity of the forward,

    w_ji = x_j^t k^t q x_i,  a_i = sum_j w_ji v x_j,  z_i = gamma (h_i - mean h_i) / s_i + beta,
    Y^_i = C ReLU(B z_i + b) + c0,   h_i = x_i + a_i,  s_i = sqrt(var h_i + eps),

by zero or by its mean over a batch of sequences (a *mean ablation*, which keeps the average
the next layer sees): the attention a_i (zero; mean), the logits w_ji (their mean at each
(j, i): the positional part, the part that depends on the categories removed), the LayerNorm's
per-token scale s_i (its mean at each position on the clean input: the normalisation made
affine), the ReLU (identity). The hand-built solutions show what each ablation detects: with
position-only logits solution 3 stays exact and solution 2 breaks (tests). The error after an
ablation is MSE / Var(Y) (:func:`relative_mse`). :func:`value_map_fit` compares v's category
block with solution 3's A_2^t and solution 1's I_N modulo the gauge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnlab.papers.logic.centring import double_centre
from attnlab.papers.logic.encoding import shift_matrix
from attnlab.papers.logic.solutions import block_diagonal


@dataclass(frozen=True)
class Structure:
    """mask: d x d 0/1 (free entries); directions: fixed d x d matrices added to the subspace."""

    name: str
    mask: np.ndarray
    directions: tuple[np.ndarray, ...] = ()


def _block(N: int, M: int, rows: str, cols: str) -> np.ndarray:
    d = N + M
    m = np.zeros((d, d))
    r = slice(0, N) if rows == "C" else slice(N, d)
    c = slice(0, N) if cols == "C" else slice(N, d)
    m[r, c] = 1
    return m


def structures(N: int, M: int) -> dict[str, list[Structure]]:
    """The structures measured per matrix ("A", "v", "B"), module docstring."""
    zero = np.zeros((N + M, N + M))
    D = shift_matrix(M)
    return {
        "A": [Structure("CC block (sol. 2)", _block(N, M, "C", "C")),
              Structure("PP block (sol. 1, 3)", _block(N, M, "P", "P")),
              Structure("c D_{-1} in PP (sol. 1, 3)", zero, (block_diagonal(None, D, N, M),))],
        "v": [Structure("PP block (sol. 2)", _block(N, M, "P", "P")),
              Structure("c S in PP (sol. 2)", zero, (block_diagonal(None, D.T, N, M),)),
              Structure("CC block (sol. 1, 3)", _block(N, M, "C", "C")),
              Structure("c I_N in CC (sol. 1)", zero, (block_diagonal(np.eye(N), None, N, M),))],
    }


def gauge_directions(N: int, M: int, which: str, layernorm: bool) -> list[np.ndarray]:
    """A basis of the gauge G of A ("A": g w^t, w' g^t) or v ("v": u g^t, and 1 u^t under LayerNorm)."""
    d = N + M
    g = np.concatenate([np.ones(N), -np.ones(M)])
    E = np.eye(d)
    if which == "A":
        return [np.outer(g, E[c]) for c in range(d)] + [np.outer(E[r], g) for r in range(d)]
    out = [np.outer(E[r], g) for r in range(d)]
    if layernorm:
        out += [np.outer(np.ones(d), E[c]) for c in range(d)]
    return out


def _projector(vec: np.ndarray) -> np.ndarray:
    return np.eye(vec.size) - np.outer(vec, vec) / (vec @ vec)


def gauge_free_norm2(A: np.ndarray, N: int, M: int, which: str, layernorm: bool) -> float:
    """min over the gauge of ||A - Gamma||_F^2 = ||P_out A P_in||_F^2."""
    g = np.concatenate([np.ones(N), -np.ones(M)])
    P = _projector(g)
    P_out = P if which == "A" else (_projector(np.ones(N + M)) if layernorm else np.eye(N + M))
    return float(np.sum((P_out @ A @ P) ** 2))


def fit_structure(A: np.ndarray, s: Structure, gauge: list[np.ndarray]) -> tuple[float, np.ndarray]:
    """(the residual min ||A - Z - Gamma||^2, the in-structure part Z of the minimiser)."""
    out = s.mask == 0
    basis = list(gauge) + list(s.directions)
    design = np.stack([b[out] for b in basis], axis=1)  # (#outside, p)
    theta, *_ = np.linalg.lstsq(design, A[out], rcond=None)
    rep = A - np.tensordot(theta, np.stack(basis), axes=1)  # gauge representative minus the E's
    resid = float(np.sum(rep[out] ** 2))
    n_g = len(gauge)
    Z = s.mask * rep + np.tensordot(theta[n_g:], np.stack(s.directions), axes=1) if s.directions else s.mask * rep
    return resid, Z


@dataclass(frozen=True)
class StructureFractions:
    """frac_s of A = k^t q and v modulo the gauge for each structure of :func:`structures` (in its order), and
    the share of ||B||_F^2 on the diagonal of B's first d rows; each a number in [0, 1] (nan: A or v is gauge)."""

    A_CC: float  # A in its CC block (solution 2)
    A_PP: float  # A in its PP block (solutions 1, 3)
    A_D: float  # A a multiple of diag(0, D_{-1}) (solutions 1, 3)
    v_PP: float  # v in its PP block (solution 2)
    v_S: float  # v a multiple of diag(0, S), S = D_{-1}^t (solution 2)
    v_CC: float  # v in its CC block (solutions 1, 3)
    v_I: float  # v a multiple of diag(I_N, 0) (solution 1)
    B_diag: float  # B diagonal ("no B": solutions 2, 3)

    def to_dict(self) -> dict[str, float]:
        """The stored form: "<matrix>: <structure name>" -> fraction, in the order of :func:`structures`."""
        return {"A: CC block (sol. 2)": self.A_CC, "A: PP block (sol. 1, 3)": self.A_PP,
                "A: c D_{-1} in PP (sol. 1, 3)": self.A_D, "v: PP block (sol. 2)": self.v_PP,
                "v: c S in PP (sol. 2)": self.v_S, "v: CC block (sol. 1, 3)": self.v_CC,
                "v: c I_N in CC (sol. 1)": self.v_I, "B: diagonal (sol. 2, 3: no B)": self.B_diag}


def structure_fractions(A: np.ndarray, v: np.ndarray, B: np.ndarray, N: int, M: int, *,
                        layernorm: bool = True) -> StructureFractions:
    """frac_s of A = k^t q and v for every structure of :func:`structures`, and B's diagonal fraction."""
    st = structures(N, M)
    frac: dict[str, list[float]] = {}
    for which, mat in (("A", A), ("v", v)):
        gauge = gauge_directions(N, M, which, layernorm)
        total = gauge_free_norm2(mat, N, M, which, layernorm)
        frac[which] = [1.0 - fit_structure(mat, s, gauge)[0] / total if total > 0 else float("nan")
                       for s in st[which]]
    d = N + M
    diag = np.zeros_like(B)
    diag[:d, :d] = np.eye(d)
    A_CC, A_PP, A_D = frac["A"]
    v_PP, v_S, v_CC, v_I = frac["v"]
    return StructureFractions(A_CC=A_CC, A_PP=A_PP, A_D=A_D, v_PP=v_PP, v_S=v_S, v_CC=v_CC, v_I=v_I,
                              B_diag=float(np.sum((B * diag) ** 2) / max(np.sum(B ** 2), 1e-300)))


def path_weights(A: np.ndarray, v: np.ndarray, N: int, M: int, path: str, *, layernorm: bool = True
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(A, v) reduced to one path: "2" (A's CC part, v's PP part) or "13" (A's PP part, v's CC part)."""
    sa = Structure("", _block(N, M, "C", "C") if path == "2" else _block(N, M, "P", "P"))
    sv = Structure("", _block(N, M, "P", "P") if path == "2" else _block(N, M, "C", "C"))
    _, Za = fit_structure(A, sa, gauge_directions(N, M, "A", layernorm))
    _, Zv = fit_structure(v, sv, gauge_directions(N, M, "v", layernorm))
    return Za, Zv


PATHS = {
    "2": "solution-2 path only: A -> its CC part, v -> its PP part",
    "13": "solution-1/3 path only: A -> its PP part, v -> its CC part",
}
"""The paths of :func:`path_predict`, by name, with what each keeps."""


def path_predict(params: dict[str, torch.Tensor], tokens: torch.Tensor, N: int, M: int, path: str, *,
                 norm: str = "layernorm") -> torch.Tensor:
    """Y^ (S, M) of the model (effective float64 weights ``params``) with A = k^t q and v replaced by
    their in-structure parts Z_A, Z_v of one path (:func:`path_weights`, :data:`PATHS`). The forward
    uses A only through k^t q, so k = I_d, q = Z_A reproduces it."""
    from attnlab.papers.logic.model import predict

    A, v = (params["k"].T @ params["q"]).numpy(), params["v"].numpy()
    Za, Zv = path_weights(A, v, N, M, path, layernorm=norm == "layernorm")
    kept = dict(params, q=torch.as_tensor(Za), k=torch.eye(N + M, dtype=torch.float64), v=torch.as_tensor(Zv))
    return predict(kept, tokens, N, norm=norm)


def solution_fractions(solution: str, q_true: np.ndarray, M: int, *, layernorm: bool = True) -> StructureFractions:
    """:func:`structure_fractions` of hand-built solution ``solution`` ("1", "2", "3") for ``q_true``
    (N x N), its B placed in the first rows of the trainable model's h x d read-out (B = I_d where
    the solution has none: "no B")."""
    from attnlab.papers.logic.model import hidden_width
    from attnlab.papers.logic.solutions import build

    N = q_true.shape[0]
    w = build(solution, q_true, M)
    B = np.zeros((hidden_width(N, M), N + M))
    if w.B is not None:
        B[: w.B.shape[0]] = w.B
    else:
        B[: N + M] = np.eye(N + M)
    return structure_fractions(w.k.T @ w.q, w.v, B, N, M, layernorm=layernorm)


def centred_fit(A_cc: np.ndarray, q_true: np.ndarray) -> tuple[float, float]:
    """(correlation, scale) of the learned CC block with q_true after removing row and column
    effects from both (double centring: the CC block's gauge adds 1 w^t and w' 1^t, and §3.3's
    q(r, t) + a(t) is the same freedom, :mod:`~attnlab.papers.logic.centring`); scale: least squares
    A_cc ~ scale * q_true."""
    a, b = double_centre(np.asarray(A_cc, np.float64)), double_centre(np.asarray(q_true, np.float64))
    denom = np.sqrt(np.sum(a * a) * np.sum(b * b))
    corr = float(np.sum(a * b) / denom) if denom > 0 else float("nan")
    scale = float(np.sum(a * b) / np.sum(b * b)) if np.sum(b * b) > 0 else float("nan")
    return corr, scale


def r2(pred: torch.Tensor, Y: torch.Tensor) -> float:
    """1 - MSE / Var(Y) over all sequences and positions."""
    return float(1 - ((pred - Y) ** 2).mean() / Y.var(unbiased=False))


# ---- ablations of a trained model: which component carries the logic -----------------------
ABLATIONS = {
    "full": "the model as trained",
    "attention zero": "ATTENTION_*^t removed (H = X)",
    "attention mean": "ATTENTION_*^t replaced by its mean over the batch (per position and coordinate)",
    "position-only logits": "w_ji replaced by its mean over the batch (per j, i): the positional part of the "
                            "logits, with the part that depends on the categories removed",
    "LayerNorm scale frozen": "each token's LayerNorm scale 1/sqrt(var + eps) replaced by its mean over the "
                              "batch at that position, computed on the clean input (the normalisation made affine)",
    "linear feed-forward": "ReLU replaced by the identity",
}
"""The ablations of :func:`ablated_predict`, by name, with what each changes."""


def ablated_predict(params: dict[str, torch.Tensor], tokens: torch.Tensor, N: int, variant: str, *,
                    norm: str = "layernorm") -> torch.Tensor:
    """Y^ (S, M) of the model (effective weights ``params``, :func:`attnlab.papers.logic.model.predict`) with one
    component ablated (:data:`ABLATIONS`), computed densely: with x_j the columns of X (S, M, d as rows),

        w_ji = x_j^t k^t q x_i,   a_i = sum_j w_ji v x_j,   h_i = x_i + a_i,
        z_i  = gamma (h_i - mean h_i) / s_i + beta,  s_i = sqrt(var h_i + eps),   Y^_i = C ReLU(B z_i + b) + c0.

    "Mean" replaces a quantity by its mean over the S sequences of ``tokens``, at the same position(s)."""
    from attnlab.papers.logic.model import LN_EPS

    if variant not in ABLATIONS:
        raise ValueError(f"variant must be one of {', '.join(ABLATIONS)}, got {variant!r}")
    S, M = tokens.shape
    dt = params["v"].dtype
    onehot = torch.nn.functional.one_hot(tokens, N).to(dt)
    X = torch.cat([onehot, torch.eye(M, dtype=dt, device=onehot.device).expand(S, M, M)], dim=-1)  # (S, M, d)
    A = params["k"].T @ params["q"]
    W = X @ A @ X.transpose(1, 2)  # (S, j, i)
    if variant == "position-only logits":
        W = W.mean(0, keepdim=True).expand_as(W)
    att = (W.transpose(1, 2) @ X) @ params["v"].T  # row i: sum_j w_ji (v x_j)^t
    if variant == "attention zero":
        att = torch.zeros_like(att)
    elif variant == "attention mean":
        att = att.mean(0, keepdim=True).expand_as(att)
    H = X + att
    if norm == "layernorm":
        mu = H.mean(-1, keepdim=True)
        s = torch.sqrt(H.var(-1, unbiased=False, keepdim=True) + LN_EPS)
        if variant == "LayerNorm scale frozen":
            s = s.mean(0, keepdim=True).expand_as(s)
        H = params["gamma"] * (H - mu) / s + params["beta"]
    U = H @ params["B"].T + params["b"]
    if variant != "linear feed-forward":
        U = torch.relu(U)
    return U @ params["C"][0] + params["c0"]


def relative_mse(pred: torch.Tensor, Y: torch.Tensor) -> float:
    """MSE / Var(Y) over all sequences and positions (1 - R^2)."""
    return float(((pred - Y) ** 2).mean() / Y.var(unbiased=False))


@dataclass(frozen=True)
class ValueMapFit:
    """Centred correlation of v's category block v[:N, :N] with solution 3's and solution 1's value maps."""

    corr_A2t: float  # with A_2^t = q_true^t (solution 3), in [-1, 1]
    corr_identity: float  # with I_N (solution 1), in [-1, 1]


def value_map_fit(v: np.ndarray, q_true: np.ndarray, N: int) -> ValueMapFit:
    """How v's category block compares with solution 3's A_2^t = q_true^t and with solution 1's I_N: the
    centred correlation (row and column means removed, what the gauge v + u g^t + 1 u'^t leaves) of
    v[:N, :N] with each (:func:`centred_fit`)."""
    v_cc = np.asarray(v, np.float64)[:N, :N]
    return ValueMapFit(corr_A2t=centred_fit(v_cc, np.asarray(q_true, np.float64).T)[0],
                       corr_identity=centred_fit(v_cc, np.eye(N))[0])
