"""attnlab.ops.lse: the row log-sum-exp L_i and the exact weights P_ij = exp(s_ij - L_i) of a
block of rows, against plain ``torch.softmax(c Q K^T + M)`` (the n x n matrix), in float32 at
n = 4096 and float64 at small n, for every causal alignment, with and without grouped heads,
by the fused kernel and by the chunked stream."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.ops import attention_lse, attention_rows
from attnlab.ops import lse as lse_module
from attnlab.ops.masks import causal_mask
from tolerances import FLOAT64

F32, F64 = torch.float32, torch.float64
METHODS = ["fused", "chunked"]


def _inputs(n_q, n_k, *, heads=2, kv_heads=None, d=64, dtype=F32, spread=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = spread * torch.randn(1, heads, n_q, d, generator=g, dtype=F64)
    k = spread * torch.randn(1, kv_heads or heads, n_k, d, generator=g, dtype=F64)
    return q.to(dtype), k.to(dtype)


def _softmax_reference(q, k, causal):
    """Plain torch.softmax(c Q K^T + M), the n_q x n_k matrix, and log-sum-exp of its logits;
    grouped heads by repeating k (what attention_rows avoids)."""
    if q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
    n_q, n_k = q.shape[-2], k.shape[-2]
    logits = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        alignment = "top_left" if causal is True else causal
        logits = logits.masked_fill(~causal_mask(n_q, n_k, alignment=alignment), -math.inf)
    weights = torch.softmax(logits, dim=-1).nan_to_num(0.0)  # rows with no key: 0
    return weights, torch.logsumexp(logits, dim=-1)


# ---------------------------------------------------------------- n = 4096, float32

N = 4096
BLOCKS = {"middle": slice(N // 2 - 64, N // 2 + 64), "end": slice(N - 128, N)}


@pytest.fixture(scope="module", params=[(None, False), (True, False), (None, True), (True, True)],
                ids=["full", "causal", "full-gqa", "causal-gqa"])
def long_case(request):
    causal, gqa = request.param
    q, k = _inputs(N, N, heads=2, kv_heads=1 if gqa else 2)
    weights, _ = _softmax_reference(q, k, causal)
    return q, k, causal, gqa, weights


@pytest.mark.parametrize("block", list(BLOCKS))
@pytest.mark.parametrize("method", METHODS)
def test_block_of_128_rows_matches_softmax_at_n_4096_float32(long_case, block, method):
    q, k, causal, gqa, weights = long_case
    rows = BLOCKS[block]
    P = attention_rows(q, k, rows, causal=causal, enable_gqa=gqa, method=method)
    assert P.shape == (1, 2, 128, N) and P.dtype == F32
    assert (P - weights[..., rows, :]).abs().max().item() <= 1e-6  # measured 7.5e-9 .. 2.2e-8
    if causal:  # keys after the query: exactly 0
        first = rows.start
        hidden = torch.arange(N)[None, :] > torch.arange(first, first + 128)[:, None]
        assert P[..., hidden].abs().max().item() == 0.0


def test_precomputed_lse_gives_the_same_block(long_case):
    q, k, causal, gqa, weights = long_case
    L = attention_lse(q, k, causal=causal, enable_gqa=gqa)
    assert L.shape == (1, 2, N)
    for rows in BLOCKS.values():
        P = attention_rows(q, k, rows, lse=L, causal=causal, enable_gqa=gqa)
        assert (P - weights[..., rows, :]).abs().max().item() <= 1e-6


def test_fused_and_chunked_lse_agree_at_n_4096_float32(long_case):
    q, k, causal, gqa, _ = long_case
    fused = attention_lse(q, k, causal=causal, enable_gqa=gqa, method="fused")
    chunked = attention_lse(q, k, causal=causal, enable_gqa=gqa, method="chunked")
    # both round L ~ 8.3 in float32 (ulp 9.5e-7); measured <= 1.9e-6
    assert (fused - chunked).abs().max().item() <= 4e-6


def test_sharp_rows_float32_error_is_that_of_softmax():
    """Logits of spread ~9 (max ~60): rows are near one-hot, P_ij of order 1, and every float32
    evaluation errs by a few ulps of the logits. Against the float64 truth, attention_rows errs
    no more than 2x torch.softmax in float32 does on the same rows (measured: 2.2e-6 softmax,
    3.4e-6 fused, 2.2e-6 chunked)."""
    q, k = _inputs(1024, 1024, spread=3.0)
    truth, _ = _softmax_reference(q.double(), k.double(), True)
    plain, _ = _softmax_reference(q, k, True)
    rows = slice(448, 576)
    plain_err = (plain[..., rows, :].double() - truth[..., rows, :]).abs().max().item()
    assert truth[..., rows, :].max().item() > 0.99  # saturated rows exist
    for method in METHODS:
        P = attention_rows(q, k, rows, causal=True, method=method)
        err = (P.double() - truth[..., rows, :]).abs().max().item()
        assert err <= 2 * plain_err + 1e-7 and err <= 3e-5, (method, err, plain_err)


# ---------------------------------------------------------------- float64, small n

SMALL = [(None, 37, 37), (True, 37, 37), ("top_left", 23, 41), ("top_left", 41, 23),
         ("bottom_right", 23, 41), ("bottom_right", 41, 23), (None, 23, 41)]


@pytest.mark.parametrize("method", ["fused", "chunked", "auto"])
@pytest.mark.parametrize("gqa", [False, True])
@pytest.mark.parametrize("causal, n_q, n_k", SMALL)
def test_float64_every_alignment_to_1e_12(causal, n_q, n_k, gqa, method):
    q, k = _inputs(n_q, n_k, heads=6, kv_heads=2 if gqa else 6, d=16, dtype=F64, spread=2.0)
    weights, lse_ref = _softmax_reference(q, k, causal)
    L = attention_lse(q, k, causal=causal, enable_gqa=gqa, method=method, chunk=8)
    assert L.dtype == F64 and L.shape == (1, 6, n_q)
    assert torch.equal(torch.isinf(L), torch.isinf(lse_ref))  # the same empty rows
    finite = torch.isfinite(lse_ref)
    assert (L[finite] - lse_ref[finite]).abs().max().item() <= FLOAT64
    row_sets = [slice(None), slice(3, 17), slice(-5, None), range(1, n_q, 3), torch.tensor([n_q - 1, 0, 7, 7])]
    for rows in row_sets:
        idx = torch.tensor(list(rows)) if isinstance(rows, range) else torch.arange(n_q)[rows]
        # method="fused" on causal scattered rows is refused; auto runs them chunked
        m = "auto" if (method == "fused" and causal and isinstance(rows, (range, torch.Tensor))) else method
        P = attention_rows(q, k, rows, causal=causal, enable_gqa=gqa, method=m, chunk=8)
        assert P.shape == (1, 6, len(idx), n_k)
        assert (P - weights[..., idx, :]).abs().max().item() <= FLOAT64


def test_bottom_right_with_fewer_queries_than_keys():
    """A decoder step against a cache: the last query sees every key, query i sees i + n_k - n_q."""
    q, k = _inputs(16, 200, d=8, dtype=F64)
    weights, _ = _softmax_reference(q, k, "bottom_right")
    P = attention_rows(q, k, slice(None), causal="bottom_right")
    assert (P - weights).abs().max().item() <= FLOAT64
    visible = (P > 0).sum(dim=-1)  # (1, 2, 16)
    assert visible[0, 0].tolist() == list(range(185, 201))
    # top-left on the same shapes differs: query i sees i + 1 keys
    assert (attention_rows(q, k, slice(None), causal="top_left") > 0).sum(dim=-1)[0, 0].tolist() == list(range(1, 17))


def test_rows_without_keys_have_lse_minus_inf_and_zero_weights():
    q, k = _inputs(12, 5, d=8, dtype=F64)  # bottom-right, n_q > n_k: rows 0..6 see nothing
    for method in METHODS:
        L = attention_lse(q, k, causal="bottom_right", method=method)
        assert torch.isneginf(L[..., :7]).all() and torch.isfinite(L[..., 7:]).all()
        P = attention_rows(q, k, range(0, 12), causal="bottom_right", method=method)
        assert P[..., :7, :].abs().max().item() == 0.0
        assert (P[..., 7:, :].sum(-1) - 1).abs().max().item() <= 1e-14


def test_lse_is_stable_where_the_naive_sum_overflows():
    """Logits near 1e4: sum exp(s) overflows even in float64, L stays finite and P exact."""
    q, k = _inputs(8, 64, d=4, dtype=F64, spread=60.0)
    logits = (q @ k.transpose(-2, -1)) / 2
    assert logits.abs().max().item() > 1e3 and torch.isinf(logits.exp().sum(-1)).any()
    for method in METHODS:
        L = attention_lse(q, k, method=method)
        assert torch.isfinite(L).all()
        P = attention_rows(q, k, slice(None), lse=L)
        assert (P - torch.softmax(logits, -1)).abs().max().item() <= FLOAT64


def test_chunked_path_is_differentiable_and_auto_takes_it_with_gradients():
    q, k = _inputs(9, 13, heads=1, d=4, dtype=F64)
    q.requires_grad_()
    k.requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: attention_lse(a, b, causal="bottom_right", chunk=4), (q, k))
    assert torch.autograd.gradcheck(lambda a, b: attention_rows(a, b, slice(2, 6), causal="bottom_right", chunk=4),
                                    (q, k))
    with pytest.raises(ConfigError, match="no gradient"):
        attention_lse(q, k, method="fused")


def test_broadcast_batch_and_plain_matrices():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(3, 2, 10, 4, generator=g, dtype=F64)
    k = torch.randn(2, 12, 4, generator=g, dtype=F64)  # shared across the leading batch axis
    weights, lse_ref = _softmax_reference(q, k.expand(3, 2, 12, 4), None)
    for method in METHODS:
        assert (attention_lse(q, k, method=method) - lse_ref).abs().max().item() <= FLOAT64
        assert (attention_rows(q, k, slice(4, 9), method=method) - weights[..., 4:9, :]).abs().max().item() <= FLOAT64
    w2, l2 = _softmax_reference(q[0, 0], k[0], "top_left")  # 2-D inputs
    assert (attention_lse(q[0, 0], k[0], causal="top_left") - l2).abs().max().item() <= FLOAT64
    assert (attention_rows(q[0, 0], k[0], [9, 2], causal="top_left") - w2[[9, 2]]).abs().max().item() <= FLOAT64


def test_strided_last_axis_is_read_correctly():
    """The CPU kernel misreads a last axis with stride != 1; the inputs are made unit-stride."""
    q, k = _inputs(20, 30, d=8, dtype=F32)
    qt = q.transpose(-1, -2).contiguous().transpose(-1, -2)
    assert qt.stride(-1) != 1
    assert (attention_lse(qt, k, method="fused") - attention_lse(q, k, method="chunked")).abs().max().item() <= 2e-6


def test_gqa_does_not_repeat_keys(monkeypatch):
    """The kernel receives the H_kv key heads as they are (grouped query heads fold into rows)."""
    seen = []
    real = lse_module._kernel

    def spy(q, k, c, is_causal):
        seen.append(k.shape[-3])
        return real(q, k, c, is_causal)

    monkeypatch.setattr(lse_module, "_kernel", spy)
    q, k = _inputs(16, 16, heads=8, kv_heads=2, d=8)
    attention_lse(q, k, enable_gqa=True, method="fused")
    attention_lse(q, k, causal=True, enable_gqa=True, method="fused")
    assert seen and set(seen) == {2}


# ---------------------------------------------------------------- bad inputs


def test_bad_inputs_raise_config_error():
    q, k = _inputs(10, 10, heads=6, kv_heads=4, d=8)
    with pytest.raises(ConfigError, match="multiple of key heads"):
        attention_lse(q, k, enable_gqa=True)
    with pytest.raises(ConfigError, match="enable_gqa=True"):
        attention_lse(q, k)
    q, k = _inputs(10, 12, d=8)
    with pytest.raises(ConfigError, match="feature sizes differ"):
        attention_lse(q, k[..., :4])
    with pytest.raises(ConfigError, match="at least two axes"):
        attention_lse(q[0, 0, 0], k)
    with pytest.raises(ConfigError, match="dtype"):
        attention_lse(q, k.double())
    with pytest.raises(ConfigError, match="ambiguous"):
        attention_lse(q, k, causal=True)
    with pytest.raises(ConfigError, match="unknown method"):
        attention_lse(q, k, method="flash")
    with pytest.raises(ConfigError, match="chunk"):
        attention_lse(q, k, chunk=0)
    with pytest.raises(ConfigError, match="enable_gqa needs a head axis"):
        attention_lse(q[0, 0], k[0, 0], enable_gqa=True)
    for rows in [slice(0, 11), slice(-11, None), range(5, 11), range(-1, 3), torch.tensor([0, 10]),
                 torch.tensor([-1]), [3, 10]]:
        with pytest.raises(ConfigError, match="outside the"):
            attention_rows(q, k, rows)
    for rows in [slice(5, 5), range(0), torch.tensor([], dtype=torch.int64)]:
        with pytest.raises(ConfigError, match="no query"):
            attention_rows(q, k, rows)
    with pytest.raises(ConfigError, match="integer index"):
        attention_rows(q, k, torch.tensor([0.0, 1.0]))
    with pytest.raises(ConfigError, match="1-D"):
        attention_rows(q, k, torch.tensor([[0, 1]]))
    with pytest.raises(ConfigError, match="lse has shape"):
        attention_rows(q, k, slice(0, 2), lse=torch.zeros(1, 2, 9))
    with pytest.raises(ConfigError, match="not one contiguous block"):
        attention_rows(q, k, [3, 1], causal="top_left", method="fused")


def test_without_a_kernel_for_the_dtype_auto_streams_and_fused_refuses(monkeypatch):
    monkeypatch.setitem(lse_module._FUSED_DTYPES, "cpu", ())
    q, k = _inputs(30, 30, d=8, dtype=F64)
    _, lse_ref = _softmax_reference(q, k, True)
    assert (attention_lse(q, k, causal=True) - lse_ref).abs().max().item() <= FLOAT64
    with pytest.raises(ConfigError, match="no fused kernel for torch.float64 on cpu"):
        attention_lse(q, k, method="fused")


# ---------------------------------------------------------------- CUDA


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 2e-5), (torch.float16, 2e-2), (torch.bfloat16, 1e-1)])
@pytest.mark.parametrize("causal, n_q, n_k", [(None, 300, 300), (True, 300, 300), ("bottom_right", 100, 333),
                                              ("bottom_right", 333, 100)])
def test_cuda_fused_lse_matches_float64(dtype, tol, causal, n_q, n_k):
    """The efficient-attention kernel's log-sum-exp (natural log, scale inside, padded rows cut)
    against the float64 stream on the CPU; and a block of weights."""
    q, k = _inputs(n_q, n_k, heads=4, kv_heads=2, d=64, dtype=F64)
    ref = attention_lse(q, k, causal=causal, enable_gqa=True, method="chunked")
    qc, kc = q.to("cuda", dtype), k.to("cuda", dtype)
    L = attention_lse(qc, kc, causal=causal, enable_gqa=True, method="fused")
    assert L.shape == ref.shape and L.dtype == torch.float32
    assert torch.equal(torch.isinf(L.cpu()), torch.isinf(ref))
    finite = torch.isfinite(ref)
    assert (L.cpu().double()[finite] - ref[finite]).abs().max().item() <= tol
    P = attention_rows(qc, kc, slice(n_q - 64, n_q), causal=causal, enable_gqa=True)
    P_ref = attention_rows(q, k, slice(n_q - 64, n_q), causal=causal, enable_gqa=True)
    assert (P.cpu().double() - P_ref).abs().max().item() <= tol
