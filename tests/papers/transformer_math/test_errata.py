"""The errata of the math text (errata.py): every record registered, the records issue 33 corrected
(x-convex, low-l2-norm) and the ones it found missing (§1.2's notation, §1.1 and §3), each with its witness
recomputed. A test of a corrected record fails on the record's old text; a test of an added record fails
while the record is missing."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch

from attnlab.analysis.parameters import ffn_parameters, layernorm_parameters
from attnlab.errata import KINDS
from attnlab.nn.block import TransformerBlock
from attnlab.nn.positional import frequencies, sinusoidal_encoding
from attnlab.papers.transformer_math.errata import ERRATA
from attnlab.registry import all_errata

TEXT = Path(__file__).resolve().parents[3].parent / "shared" / "papers" / "math-behind-transformers.md"
BY_ID = {e.id.split(".", 1)[1]: e for e in ERRATA}


def _text() -> str:
    if not TEXT.is_file():
        pytest.skip(f"the text is not beside the repository ({TEXT})")
    return " ".join(TEXT.read_text(encoding="utf-8").split())


def _record(slug: str, kind: str, where: str):
    e = BY_ID.get(slug)
    assert e is not None, f"transformer-math.{slug} is not recorded"
    assert e.kind == kind and e.kind in KINDS and where in e.where, (e.kind, e.where)
    assert e.whose and e.witness and e.survives in ("yes", "partly", "no", "open")
    return e


def test_every_record_is_registered_once_in_text_order_of_sections():
    assert [e.id for e in all_errata(["transformer-math"])] == [e.id for e in ERRATA]
    assert len(BY_ID) == len(ERRATA) == 37
    sections = [e.where.split(",")[0].split(" ")[0] for e in ERRATA]
    assert sections[:4] == ["§1.1"] * 3 + ["§1.1.1"] and sections[-1] == "§3.1.2"


# ---- corrected records --------------------------------------------------------------------------------------
def test_x_convex_says_only_the_sparsity_budget_breaks():
    """The old record said |e1 + e2| can reach 2 eps: a convex combination keeps every entry within eps."""
    e = _record("x-convex", "wrong statement", "§3.1.2")
    assert "2 eps" not in e.correct and "within eps" in e.correct and "only the sparsity budget breaks" in e.correct
    assert "box" in e.correct and "convex" in e.conclusion and "box" in e.conclusion
    assert "sum of error matrices, according to our definition, is an error matrix" in e.says
    assert e.survives == "partly" and e.check == "transformer-math.head-set-convex"
    # the witness: two errors of s = 2 nonzeros within eps; every convex combination stays within eps,
    # while the midpoint has 4 nonzeros
    eps, g = 0.05, torch.Generator().manual_seed(0)
    E1, E2 = torch.zeros(5, 5, dtype=torch.float64), torch.zeros(5, 5, dtype=torch.float64)
    E1[0, 3], E1[1, 4], E2[3, 0], E2[4, 1] = eps, -eps, eps, -eps
    for t in torch.rand(100, generator=g, dtype=torch.float64):
        assert (t * E1 + (1 - t) * E2).abs().max() <= eps
    assert int(((E1 + E2) / 2 != 0).sum()) == 4


def test_low_l2_norm_names_the_authors_frobenius_norm_of_padded_maps():
    """The old record argued with the spectral norm of a row-stochastic n x n map; the author took NumPy's
    default matrix norm (Frobenius) of the padded 350 x 350 maps."""
    e = _record("low-l2-norm", "omission", "§3.1")
    assert "spectral norm of any row-stochastic" not in e.correct
    assert "Frobenius" in e.correct and "padded" in e.correct and "np.linalg.norm" in e.correct
    assert "[4.7, 18.7]" in e.correct and "7.5-9.3" in e.witness and "16 of 350" in e.witness
    assert e.survives == "partly" and e.check == "transformer-math.head-thesis-full-rank"
    # the range: 350 rows, each a distribution over 16 keys: uniform rows give sqrt(350/16), one-hot sqrt(350)
    uniform = torch.zeros(350, 350, dtype=torch.float64)
    uniform[:, :16] = 1 / 16
    one_hot = torch.zeros(350, 350, dtype=torch.float64)
    one_hot[:, 0] = 1
    lo, hi = float(torch.linalg.matrix_norm(uniform)), float(torch.linalg.matrix_norm(one_hot))
    assert (round(lo, 1), round(hi, 1)) == (4.7, 18.7)
    assert int(torch.linalg.matrix_rank(uniform)) == 1  # the padded map's rank counts real keys at most


# ---- §1.1 ---------------------------------------------------------------------------------------------------
def test_chain_rule_conditioning():
    e = _record("chain-rule-conditioning", "typo", "§1.1")
    assert "p(y_t|y_t)" in e.says and "y_{<t}" in e.correct
    # a joint distribution over two steps of a 2-token vocabulary
    p = torch.tensor([[0.1, 0.3], [0.4, 0.2]], dtype=torch.float64)
    p1, p2 = p.sum(1), p.sum(0)  # marginals of y_1 and y_2
    for a, b in itertools.product(range(2), repeat=2):
        assert float(p1[a] * (p[a, b] / p1[a])) == pytest.approx(float(p[a, b]))  # p(y_1) p(y_2 | y_<2) = p(y)
        printed = float(p1[a] / p1[a]) * float(p2[b] / p2[b])  # p(y_1 | y_1) p(y_2 | y_2) = 1
        assert printed == 1.0 != float(p[a, b])


def test_loss_sign():
    e = _record("loss-sign", "typo", "§1.1")
    assert math.log(0.5) == pytest.approx(-0.693, abs=1e-3) and -math.log(0.5) > 0
    assert "-0.693" in e.witness and "+0.693" in e.witness


def test_search_space_length():
    e = _record("search-space-length", "typo", "§1.1")
    V, n, n_out = ["a", "b", "c"], 4, 2  # a source of 4 tokens, a target of 2
    assert len(list(itertools.product(V, repeat=n_out))) == len(V) ** n_out != len(V) ** n
    assert "|V|^{n'}" in e.correct


def test_context_vector_range():
    e = _record("context-vector-range", "notation", "§1.1.1")
    text = _text()
    assert "k = 1, \\dots, n$$" in text and "\\sum_{i=1}^m a_{t,i}s_i" in text  # weights over n, a sum to m
    g = torch.Generator().manual_seed(3)
    n, m = 6, 4
    a = torch.softmax(torch.randn(n, generator=g, dtype=torch.float64), 0)
    assert float(a.sum()) == pytest.approx(1.0) and float(a[:m].sum()) < 1.0  # a sum to m != n drops weight
    assert "sum_{i=1}^n" in e.correct


# ---- §1.2 ---------------------------------------------------------------------------------------------------
def test_pe_vector_indices():
    e = _record("pe-vector-indices", "notation", "§1.2.1")
    d, t = 16, 3.0
    P = sinusoidal_encoding(8, d, dtype=torch.float64)  # eq. (1): interleaved sin, cos
    w = frequencies(d)
    assert float(P[3, 1]) == pytest.approx(math.cos(float(w[0]) * t))  # coordinate 1 is cos(w_0 t)
    assert float(P[3, 1]) != pytest.approx(math.sin(float(w[1]) * t))  # not the display's sin(w_1 t)
    assert 10000.0 ** (-2 * d / d) < float(w.min())  # w_d = N^-2 is below every frequency eq. (1) uses
    assert "cos(w_0 t)" in e.witness


def test_score_transpose():
    e = _record("score-transpose", "notation", "§1.2.2")
    d, k = 8, 4
    W_q, W_k, x_i, x_j = torch.randn(d, k), torch.randn(d, k), torch.randn(d, 1), torch.randn(d, 1)
    q, key = W_q.T @ x_i, W_k.T @ x_j  # Q(x_i) = W_q^T x_i: columns of R^k
    assert (q @ key.T).shape == (k, k)  # the product printed: a matrix, not a score
    assert (q.T @ key).shape == (1, 1)
    assert "k x k" in e.witness


def test_ffn_bias_shape():
    e = _record("ffn-bias-shape", "notation", "§1.2.2")
    d, m = 512, 2048
    vector_bias = ffn_parameters(d, m)
    assert vector_bias == 2 * d * m + m + d == 2_099_712
    assert vector_bias - (2 * d * m + 2) == 2558
    linear = torch.nn.Sequential(torch.nn.Linear(d, m), torch.nn.Linear(m, d))
    assert sum(p.numel() for p in linear.parameters()) == vector_bias  # [1]'s FFN: a bias per unit
    assert "2,097,154" in e.witness and "2558" in e.witness


def test_second_norm_index():
    e = _record("second-norm-index", "typo", "§1.2.2")
    block = TransformerBlock(6, 3, 7)
    assert block.norm1.gamma is not block.norm2.gamma  # each LayerNorm has its own gain and bias
    assert sum(p.numel() for m in (block.norm1, block.norm2) for p in m.parameters()) == 2 * layernorm_parameters(6)
    assert "gamma_2, beta_2" in e.correct


def test_layernorm_range():
    e = _record("layernorm-range", "notation", "§1.2.2")
    d, k = 512, 64
    z = torch.cat([torch.ones(k), torch.zeros(d - k)]).double()
    assert float(z[:k].mean()) == 1.0 and float(z.mean()) == 0.125  # the printed mu_z, and the mean of z
    assert float(z[:k].std(unbiased=False)) == 0.0  # the printed sigma_z: z would be divided by eps alone
    assert "0.125" in e.witness


def test_head_split_shape():
    e = _record("head-split-shape", "notation", "§1.2.2")
    W_q = torch.randn(512, 512)
    for n in (7, 30):
        X = torch.randn(n, 512)
        assert W_q[:, :64].shape == (512, 64) and (X @ W_q[:, :64]).shape == (n, 64)
    assert "(n, k)" in e.says and "d x k" in e.correct


def test_eq3_value_slice():
    e = _record("eq3-value-slice", "typo", "§1.2.2, eq. (3)")
    d, dk = 8, 2
    W_k, W_v = torch.randn(d, d), torch.randn(d, d)
    printed_last_v, last_k = W_k[:, d - dk:d], W_k[:, d - dk:d]  # W_{d/k,v} = W_k[:, d-d_k:d] as printed
    x = torch.randn(5, d)
    assert torch.equal(x @ printed_last_v, x @ last_k)  # V^(H) = K^(H) for every input
    assert not torch.equal(x @ W_v[:, d - dk:d], x @ last_k)
    assert "W_v[:, d-d_k:d]" in e.correct


def test_eq4_subscript():
    e = _record("eq4-subscript", "typo", "§1.2.2, eq. (4)")
    text = _text()
    assert "W_{h,a}^T(x_i)" in text and "W_{a}" not in text and "W_{h,a} \\in" not in text
    assert "W_{h,q}" in e.correct


def test_eq7_head_count():
    e = _record("eq7-head-count", "notation", "§1.2.2, eq. (7)")
    text = _text()
    assert "Concat(head_1, \\dots, head_h)W_c" in text and "i = 1, \\dots, H" in text
    assert "head_H" in e.correct


def test_gamma_division():
    e = _record("gamma-division", "typo", "§1.2.4")
    z = torch.full((4,), 3.0, dtype=torch.float64)  # a constant row: sigma_z = 0
    sigma = ((z - z.mean()) ** 2).mean().sqrt()
    for gamma in (0.5, 2.0):
        assert torch.isnan(gamma * (z - z.mean()) / (sigma + 0.0)).all()  # 0 / 0 whatever gamma is
    assert torch.isfinite(2.0 * (z - z.mean()) / (sigma + 1e-6)).all()  # eps is what avoids it
    assert "epsilon" in e.correct


def test_layernorm_matrix_form():
    e = _record("layernorm-matrix-form", "notation", "§1.2.4")
    n, d = 5, 8
    g = torch.Generator().manual_seed(0)
    S = torch.randn(n, d, generator=g, dtype=torch.float64)  # X + U'

    def per_row(M):  # eq. (2) on each row
        return (M - M.mean(-1, keepdim=True)) / (M.std(-1, unbiased=False, keepdim=True) + 1e-6)

    def whole(M):  # one mu and one sigma for the whole matrix
        return (M - M.mean()) / (M.std(unbiased=False) + 1e-6)

    T = S.clone()
    T[3] += 10.0  # another token changes
    assert torch.allclose(per_row(S)[0], per_row(T)[0])  # row 0 does not move under eq. (2)
    assert not torch.allclose(whole(S)[0], whole(T)[0])  # it moves with whole-matrix statistics
    with pytest.raises(RuntimeError):
        torch.randn(d) @ S  # gamma_1 in R^d times an n x d matrix (n != d)
    assert "diag(gamma_1)" in e.correct


def test_encoder_stack_index():
    e = _record("encoder-stack-index", "typo", "§1.2.4")
    text = _text()
    assert "f_{\\theta_1} \\circ \\ldots \\circ f_{\\theta_1}(X)" in text
    assert "f_{\\theta_L} \\circ \\ldots \\circ f_{\\theta_1}(X)" in text  # §1.2.2 writes it right
    assert "theta_L" in e.correct


def test_masked_scores_name():
    e = _record("masked-scores-name", "typo", "§1.2.5")
    text = _text()
    assert "Let A be the matrix of scaled values" in text and "add matrix M to matrix S" in text
    assert "M + A" in e.correct


def test_masked_row_combination():
    e = _record("masked-row-combination", "typo", "§1.2.5")
    n, dv, j = 6, 3, 2
    g = torch.Generator().manual_seed(1)
    scores = torch.randn(n, n, generator=g, dtype=torch.float64)
    M = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)
    A = torch.softmax(scores + M, -1)
    V = torch.randn(n, dv, generator=g, dtype=torch.float64)
    out = A @ V
    assert torch.allclose(out[j], sum(A[j, i] * V[i] for i in range(j + 1)))  # a combination of v_1..v_j
    W = V.clone()
    W[j + 1:] = torch.randn(n - j - 1, dv, generator=g, dtype=torch.float64)
    assert torch.allclose((A @ W)[j], out[j])  # later values do not reach row j
    assert torch.allclose(A @ (2 * V), 2 * out)  # linear in V
    assert "v_1, ..., v_j" in e.correct


def test_cross_attention_projections():
    e = _record("cross-attention-projections", "omission", "§1.2.5")
    g = torch.Generator().manual_seed(2)
    X, Z, k = torch.randn(4, 6, generator=g), torch.randn(7, 6, generator=g), 6
    weights = torch.softmax(X @ Z.T / math.sqrt(k), -1)
    assert torch.allclose(weights.sum(-1), torch.ones(4)) and (weights >= 0).all()  # rows: convex combinations
    assert (weights @ Z).shape == (4, 6)  # of the encoder's rows, with nothing to learn
    assert "W_k" in e.correct and "no parameters" in e.witness


# ---- §2.1.3 -------------------------------------------------------------------------------------------------
def test_eq17_value_shape():
    e = _record("eq17-value-shape", "notation", "§2.1.3, eq. (17)")
    n, k, k_ = 10, 4, 3
    F, V = torch.randn(k_, n), torch.randn(n, k)
    P = torch.softmax(torch.randn(n, k_), -1)
    assert (F @ V).shape == (k_, k) and (P @ (F @ V)).shape == (n, k)
    assert "k' x k" in e.correct


# ---- §3 -----------------------------------------------------------------------------------------------------
def test_geometric_qk_shapes():
    e = _record("geometric-qk-shapes", "notation", "§3")
    n, d = 5, 8
    X, W_q, W_k = torch.randn(n, d), torch.randn(d, d), torch.randn(d, d)
    with pytest.raises(RuntimeError):
        W_q @ X  # tokens as rows: undefined for n != d
    Xc = X.T  # tokens as columns
    assert ((W_q @ Xc) @ (W_k @ Xc).T).shape == (d, d)  # not the n x n matrix Q K^T
    assert ((X @ W_q) @ (X @ W_k).T).shape == (n, n)
    assert "X W_q (X W_k)^T" in e.correct


def test_attends_index():
    e = _record("attends-index", "typo", "§3")
    g = torch.Generator().manual_seed(4)
    q, keys, v = (torch.randn(3, 5, generator=g, dtype=torch.float64) for _ in range(3))
    w = torch.softmax(q @ keys.T, -1)  # eq. (18) with f = exp(<q, k>): row j of the weights is q_j's
    o = w @ v
    q2 = q.clone()
    q2[1] += 1.0  # another query changes
    assert torch.allclose((torch.softmax(q2 @ keys.T, -1) @ v)[0], o[0])  # o_0 depends on q_0 alone
    assert "q_j" in e.correct
