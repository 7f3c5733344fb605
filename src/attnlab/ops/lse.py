"""Exact attention weights of any block of queries at long context: the row log-sum-exp.

For queries q_i and keys k_j (shapes below), scale c and the allowed set A_i of query i,

    s_ij = c q_i . k_j                                                        (1)
    L_i  = log sum_{j in A_i} exp(s_ij)                                       (2)
    P_ij = exp(s_ij - L_i)  for j in A_i,   P_ij = 0  otherwise               (3)

P is exactly the softmax attention matrix softmax(c Q K^T + M) of :mod:`attnlab.ops.softmax`
(M_ij = 0 on A_i, -inf off it): softmax_j(s_ij) = exp(s_ij) / sum_{l in A_i} exp(s_il)
= exp(s_ij - L_i). So once the n_q numbers L_i are known, any row block P[rows, :] is a
closed form of that block's logits alone, O(block * n_k) memory, with no n_q x n_k tensor
anywhere. Shapes:

    Q: (..., n_q, d)    K: (..., n_k, d)    L: (..., n_q)    P[rows]: (..., len(rows), n_k)

with grouped-query attention (``enable_gqa=True``) Q: (..., H, n_q, d) and K: (..., H_kv, n_k, d),
H a multiple of H_kv, query head h reading key head h // (H / H_kv).

The allowed set A_i (:mod:`attnlab.ops.masks`): every key; or causal, top-left j <= i, or
bottom-right j <= i + (n_k - n_q). A row with A_i empty has L_i = -inf and P_i. = 0 (the
fully-masked-row convention of :mod:`attnlab.ops.softmax`).

L is computed two ways, both exact up to rounding:

* ``"fused"``: PyTorch's flash-attention kernels return L as a by-product of the output:
  the per-row softmax statistics m_i (running maximum) and l_i (normaliser) that Dao et al.
  2022, FlashAttention §3.1, keep for the backward pass, stored as L_i = m_i + log l_i
  (FlashAttention-2, Dao 2023, Alg. 1); the natural log, with the scale c inside. On the CPU
  ``aten._scaled_dot_product_flash_attention_for_cpu`` (float32, float64, float16, bfloat16;
  L in float32 for the 16-bit types; inputs must be 4-D, and a last axis with stride != 1 is
  misread, so it is made unit-stride here; no key at all crashes it, so n_k = 0 never reaches
  it); on CUDA
  ``aten._scaled_dot_product_efficient_attention`` with ``compute_log_sumexp`` (float32, float16,
  bfloat16; its L is padded to a multiple of 32 rows and cut back here). The kernel also
  computes an output, against V = K, which is discarded: twice the matmul work of L alone, in
  O(n_q d) memory. Causal attention of a block whose first row is not query 0 (any bottom-right
  alignment, any block of :func:`attention_rows`) is a row offset o (row t sees j <= t + o),
  which no kernel flag expresses; it is split into at most three kernel calls on square or
  unmasked pieces, combined with log(e^a + e^b) (``torch.logaddexp``):

      rows t < -o:         no key                                       L = -inf
      keys j < o:          seen by every row (no mask)                  L_pre
      keys o <= j < o + m: top-left causal on the square t < m          L_causal
      rows t >= m:         every key j >= o (m = number of those keys)  L_rest

* ``"chunked"``: the streaming form (Milakov & Gimelshein 2018, "Online normalizer
  calculation for softmax", Alg. 3, a chunk of keys at a time instead of one; FlashAttention's
  loop over key blocks): over key chunks J_1, J_2, ... of size C,

      L_i <- logaddexp(L_i, logsumexp_{j in J_t, j in A_i} s_ij),   L_i = -inf at the start,

  memory O(n_q C). It runs anywhere, takes any dtype, and is differentiable (the kernels'
  L carries no gradient). ``"auto"`` takes the kernel where there is one for the device and
  dtype, no gradient is needed and the rows are a contiguous block (or the attention is not
  causal), else the chunked form.

Numerics. softmax(s) computed as exp(s_ij) / sum exp(s_il) overflows past s ~ 88 (float32)
and its normaliser underflows for very negative rows; the shifted form exp(s_ij - m_i) /
sum exp(s_il - m_i) is stable but still needs the whole row at once. (3) needs only L_i,
which is stored at the magnitude of the largest logit: logsumexp shifts by the row (chunk)
maximum internally and logaddexp(a, b) = max(a, b) + log1p(exp(-|a - b|)) never overflows, so
L_i is finite whenever some s_ij is, and exp(s_ij - L_i) <= 1 never overflows. Rounding: an
error e in L_i is a relative error e in every P_ij of the row; float32 rounds L_i to
|L_i| * 6e-8 (half an ulp), so P carries a relative error of a few ulps of |L_i| plus those of
s_ij, about 1e-6 relative for logits of size ~10 (tests/ops/test_lse.py: max abs error
against ``torch.softmax`` <= 1e-6 at n = 4096 in float32, measured <= 2.2e-8 for logits of
unit spread; <= 1e-12 in float64). For near one-hot rows (logits ~60) P_ij ~ 1 and the
error is a few ulps of the logits, ~5e-6 in float32, as for ``torch.softmax`` itself.
"""

from __future__ import annotations

import math
from typing import Literal, Sequence, Union

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.masks import resolve_causal
from attnlab.ops.softmax import Scale, resolve_scale

Method = Literal["auto", "fused", "chunked"]
METHODS = ("auto", "fused", "chunked")
Rows = Union[slice, range, Tensor, Sequence[int]]
DEFAULT_CHUNK = 1024  # keys per step of the chunked form: a (rows x 1024) logit tile

_FUSED_DTYPES = {
    "cpu": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    "cuda": (torch.float32, torch.float16, torch.bfloat16),
}


def attention_lse(
    q: Tensor,
    k: Tensor,
    *,
    causal: bool | str | None = None,
    scale: Scale = "1/sqrt(d)",
    enable_gqa: bool = False,
    method: Method = "auto",
    chunk: int = DEFAULT_CHUNK,
) -> Tensor:
    """L_i = log sum_{j in A_i} exp(c q_i . k_j), eq. (2) of the module docstring.

    Parameters
    ----------
    q, k : (..., n_q, d), (..., n_k, d); leading axes broadcast. With ``enable_gqa``
        (..., H, n_q, d) and (..., H_kv, n_k, d), H a multiple of H_kv: head h reads key
        head h // (H / H_kv), and k is never repeated.
    causal : None/False, True (n_q == n_k), "top_left" (j <= i) or "bottom_right"
        (j <= i + n_k - n_q)
    scale : c: "1/sqrt(d)", "1/d", "none" or a positive float
    method : "auto", "fused" (PyTorch's flash kernel; a ConfigError where it cannot run)
        or "chunked" (exact streaming over ``chunk`` keys at a time)

    Returns
    -------
    L : (..., n_q) in float64 for float64 inputs, else float32; -inf for a row that no key
        is allowed for. Memory O(n_q d) fused, O(n_q chunk) chunked: never n_q x n_k.
    """
    p = _Problem(q, k, causal, scale, enable_gqa, method, chunk)
    if p.n_q == 0:
        return torch.empty(*p.batch, 0, dtype=p.acc, device=q.device)
    return p.lse(_resolve_rows(slice(None), p.n_q))


def attention_rows(
    q: Tensor,
    k: Tensor,
    rows: Rows,
    *,
    lse: Tensor | None = None,
    causal: bool | str | None = None,
    scale: Scale = "1/sqrt(d)",
    enable_gqa: bool = False,
    method: Method = "auto",
    chunk: int = DEFAULT_CHUNK,
) -> Tensor:
    """The exact attention weights of a block of queries, P[..., rows, :], eq. (3):

        P_ij = exp(c q_i . k_j - L_i) for j in A_i, 0 otherwise,   i in rows, 0 <= j < n_k.

    Equal to ``softmax(c Q K^T + M)[..., rows, :]`` up to rounding, without the n_q x n_k
    matrix: L_i depends only on q_i (and all of K), so the block's own L is computed when
    ``lse`` is not given and memory is O(len(rows) * n_k).

    Parameters
    ----------
    q, k, causal, scale, enable_gqa, method, chunk : as in :func:`attention_lse`
    rows : a slice or a range of query indices, or a 1-D integer tensor (or sequence) of
        indices in [0, n_q), in any order, repeats allowed
    lse : optional, ``attention_lse(q, k, ...)`` of every row, shape (..., n_q), computed with
        the same causal, scale and enable_gqa: reused instead of recomputing the block's L

    Returns
    -------
    P : (..., len(rows), n_k), float64 for float64 inputs, else float32; masked entries and
        rows with no allowed key exactly 0; each allowed row sums to 1 up to rounding.
    """
    p = _Problem(q, k, causal, scale, enable_gqa, method, chunk)
    block = _resolve_rows(rows, p.n_q)
    if lse is None:
        L = p.lse(block)
    else:
        L = p.select_lse(lse, block)
    return p.weights(block, L)


# --------------------------------------------------------------------------- rows


class _Block:
    """The selected query rows: positions (a CPU int64 tensor) and, for a step-1 run of rows,
    its first row (``start``), else None."""

    def __init__(self, positions: Tensor, start: int | None):
        self.positions = positions
        self.start = start
        self.size = positions.numel()
        self.last = int(positions.max()) if self.size else -1

    def take(self, x: Tensor, dim: int) -> Tensor:
        """x restricted to the block along ``dim`` (a view for a contiguous block)."""
        if self.start is not None:
            return x.narrow(dim, self.start, self.size)
        return x.index_select(dim, self.positions.to(x.device))


def _resolve_rows(rows: Rows, n_q: int) -> _Block:
    if isinstance(rows, slice):
        for bound in (rows.start, rows.stop):
            if bound is not None and not -n_q <= bound <= n_q:
                raise ConfigError(f"rows {rows} reach outside the {n_q} queries: "
                                  f"keep slice bounds within [-{n_q}, {n_q}]")
        start, stop, step = rows.indices(n_q)
        rng = range(start, stop, step)
        if len(rng) == 0:
            raise ConfigError(f"rows {rows} select no query of {n_q}: pass a non-empty slice")
        if step == 1:
            return _Block(torch.arange(start, stop), start)
        return _Block(torch.tensor(rng, dtype=torch.int64), None)
    if isinstance(rows, range):
        if len(rows) == 0:
            raise ConfigError(f"rows {rows} select no query: pass a non-empty range")
        if min(rows[0], rows[-1]) < 0 or max(rows[0], rows[-1]) >= n_q:
            raise ConfigError(f"rows {rows} reach outside the queries: every row must lie in [0, {n_q})")
        if rows.step == 1:
            return _Block(torch.arange(rows.start, rows.stop), rows.start)
        return _Block(torch.tensor(rows, dtype=torch.int64), None)
    if isinstance(rows, Tensor):
        if rows.dtype == torch.bool or rows.is_floating_point() or rows.is_complex():
            raise ConfigError(f"rows must be an integer index tensor, got dtype {rows.dtype}")
        if rows.ndim != 1:
            raise ConfigError(f"rows must be a 1-D index tensor, got shape {tuple(rows.shape)}")
        idx = rows.detach().to("cpu", torch.int64)
    else:
        try:
            idx = torch.as_tensor(list(rows), dtype=torch.int64)
        except (TypeError, ValueError, RuntimeError):
            raise ConfigError(f"rows must be a slice, a range or integer indices, got {type(rows).__name__}") from None
        if idx.ndim != 1:
            raise ConfigError("rows must be a flat sequence of integer indices")
    if idx.numel() == 0:
        raise ConfigError("rows select no query: pass at least one index")
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= n_q:
        raise ConfigError(f"rows reach outside the queries: indices run from {lo} to {hi}, allowed [0, {n_q})")
    return _Block(idx, None)


# --------------------------------------------------------------------------- problem


class _Problem:
    """Checked inputs: c, the causal offset o (row i sees j <= i + o), the GQA group size g."""

    def __init__(self, q, k, causal, scale, enable_gqa, method, chunk):
        if not isinstance(q, Tensor) or not isinstance(k, Tensor):
            raise ConfigError("q and k must be tensors of shape (..., n, d)")
        if q.ndim < 2 or k.ndim < 2:
            raise ConfigError("q and k must have at least two axes (..., n, d)")
        if q.shape[-1] != k.shape[-1]:
            raise ConfigError(f"query and key feature sizes differ: q has d={q.shape[-1]}, k has d={k.shape[-1]}")
        if q.shape[-1] == 0:
            raise ConfigError("q and k have feature size d = 0: attention needs d >= 1")
        if q.dtype != k.dtype or not q.is_floating_point():
            raise ConfigError(f"q and k must share one floating-point dtype, got {q.dtype} and {k.dtype}")
        if q.device != k.device:
            raise ConfigError(f"q and k are on different devices: {q.device} and {k.device}")
        if method not in METHODS:
            raise ConfigError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise ConfigError(f"chunk must be a positive integer (keys per step), got {chunk!r}")
        self.q, self.k, self.method, self.chunk = q, k, method, chunk
        self.n_q, self.n_k, self.d = q.shape[-2], k.shape[-2], q.shape[-1]
        self.c = resolve_scale(scale, self.d)
        alignment = resolve_causal(causal, self.n_q, self.n_k)
        self.offset = None if alignment is None else (0 if alignment == "top_left" else self.n_k - self.n_q)
        self.acc = torch.float64 if q.dtype == torch.float64 else torch.float32
        self.gqa = bool(enable_gqa)
        if self.gqa:
            if q.ndim < 3 or k.ndim < 3:
                raise ConfigError("enable_gqa needs a head axis: q (..., H, n_q, d) and k (..., H_kv, n_k, d)")
            H, H_kv = q.shape[-3], k.shape[-3]
            if H_kv == 0 or H % H_kv:
                raise ConfigError(f"query heads H={H} are not a multiple of key heads H_kv={H_kv}: "
                                  "use a number of query heads divisible by the key heads")
            self.h_kv, self.g = H_kv, H // H_kv
            lead_q, lead_k = q.shape[:-3], k.shape[:-3]
        else:
            self.h_kv, self.g = None, 1
            lead_q, lead_k = q.shape[:-2], k.shape[:-2]
        try:
            lead = tuple(torch.broadcast_shapes(lead_q, lead_k))
        except RuntimeError:
            hint = "" if self.gqa or q.ndim < 3 or k.ndim < 3 or q.shape[-3] == k.shape[-3] else (
                "; for grouped-query heads pass enable_gqa=True")
            raise ConfigError(f"q and k batch shapes do not broadcast: {tuple(lead_q)} and "
                              f"{tuple(lead_k)}{hint}") from None
        self.batch = lead + ((q.shape[-3],) if self.gqa else ())  # leading shape of L and P
        self.grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad)

    # ---- GQA folding: the g query heads of one key head share that key head's logits
    def fold(self, x: Tensor) -> Tensor:
        """(..., H, b, X) -> (..., H_kv, g b, X): row r b + t of key head h' is query head h' g + r."""
        if not self.gqa:
            return x
        return x.unflatten(-3, (self.h_kv, self.g)).flatten(-3, -2)

    def unfold(self, x: Tensor, b: int) -> Tensor:
        """(..., H_kv, g b, X) -> (..., H, b, X), the inverse of :meth:`fold`."""
        if not self.gqa:
            return x
        return x.unflatten(-2, (self.g, b)).flatten(-4, -3)

    # ---- L for a block of rows
    def lse(self, block: _Block) -> Tensor:
        use_fused = self._choose(block)
        if use_fused:
            try:
                return self._fused(block)
            except RuntimeError as err:
                if self.method == "fused":
                    raise ConfigError(f"the fused kernel refused these inputs ({str(err).splitlines()[0]}): "
                                      "use method='chunked' or 'auto'") from None
        return self._chunked(block)

    def _choose(self, block: _Block) -> bool:
        dev = self.q.device.type
        reasons = []
        if self.q.dtype not in _FUSED_DTYPES.get(dev, ()):
            reasons.append(f"no fused kernel for {self.q.dtype} on {dev}")
        if self.grad:
            reasons.append("the kernel's log-sum-exp carries no gradient")
        if self.offset is not None and block.start is None:
            reasons.append("causal rows that are not one contiguous block")
        if self.method == "fused" and reasons:
            raise ConfigError(f"method='fused' cannot run here ({'; '.join(reasons)}): use method='chunked' or 'auto'")
        return self.method != "chunked" and not reasons

    def _chunked(self, block: _Block) -> Tensor:
        """The streaming form: L <- logaddexp(L, logsumexp over the next key chunk)."""
        q = self.fold(block.take(self.q, -2))  # (..., R, d), R = g b
        k = self.k
        R = q.shape[-2]
        lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
        L = torch.full((*lead, R), -math.inf, dtype=self.acc, device=q.device)
        limit = None  # row r may see keys j <= limit[r]
        stop = self.n_k
        if self.offset is not None:
            limit = (block.positions.repeat(self.g) + self.offset).to(q.device)  # (R,)
            stop = max(0, min(self.n_k, block.last + self.offset + 1))  # no row sees past this key
        for j0 in range(0, stop, self.chunk):
            j1 = min(j0 + self.chunk, stop)
            s = (q @ k[..., j0:j1, :].transpose(-2, -1)).to(self.acc) * self.c  # (..., R, C)
            if limit is not None:
                j = torch.arange(j0, j1, device=q.device)
                s = s.masked_fill(j[None, :] > limit[:, None], -math.inf)
            L = torch.logaddexp(L, torch.logsumexp(s, dim=-1))
        return self.unfold(L.unsqueeze(-1), block.size).squeeze(-1)  # (..., b)

    def _fused(self, block: _Block) -> Tensor:
        q = block.take(self.q, -2)  # (..., [H,] b, d)
        b = block.size
        o = None if self.offset is None else self.offset + block.start
        if self.g == 1 or o is None:  # non-causal GQA: the g heads of a group are g b rows
            L = _fused_offset(self.fold(q), self.k, self.c, o, self.acc)
            return self.unfold(L.unsqueeze(-1), b).squeeze(-1)
        heads = q.unflatten(-3, (self.h_kv, self.g))  # (..., H_kv, g, b, d)
        parts = [_fused_offset(heads[..., r, :, :], self.k, self.c, o, self.acc) for r in range(self.g)]
        return torch.stack(parts, dim=-2).flatten(-3, -2)  # (..., H_kv, g, b) -> (..., H, b)

    # ---- given L, P for the block
    def select_lse(self, lse: Tensor, block: _Block) -> Tensor:
        if not isinstance(lse, Tensor):
            raise ConfigError("lse must be a tensor: attention_lse(q, k, ...) of every row")
        expected = (*self.batch, self.n_q)
        if tuple(lse.shape) != expected:
            raise ConfigError(f"lse has shape {tuple(lse.shape)}, expected (..., n_q) = {expected}: "
                              "pass attention_lse(q, k, ...) of every row, with the same causal and enable_gqa")
        return block.take(lse.to(self.q.device, self.acc), -1)

    def weights(self, block: _Block, L: Tensor) -> Tensor:
        """P_ij = exp(c q_i . k_j - L_i) on A_i, 0 elsewhere: (..., b, n_k)."""
        b = block.size
        q = self.fold(block.take(self.q, -2))  # (..., R, d)
        Lf = self.fold(L.unsqueeze(-1))  # (..., R, 1)
        s = (q @ self.k.transpose(-2, -1)).to(self.acc)  # (..., R, n_k)
        inplace = not (torch.is_grad_enabled() and (self.grad or L.requires_grad))
        if inplace:
            P = s.mul_(self.c).sub_(Lf).exp_()
        else:
            P = torch.exp(s * self.c - Lf)
        if self.offset is not None:
            limit = (block.positions.repeat(self.g) + self.offset).to(q.device)  # (R,)
            j = torch.arange(self.n_k, device=q.device)
            hidden = j[None, :] > limit[:, None]  # (R, n_k): O(b n) like P itself
            P = P.masked_fill_(hidden, 0.0) if inplace else P.masked_fill(hidden, 0.0)
        return self.unfold(P, b)


# --------------------------------------------------------------------------- kernels


def _fused_offset(q: Tensor, k: Tensor, c: float, o: int | None, acc: torch.dtype) -> Tensor:
    """L of rows t = 0..b-1 of q (..., b, d) against k (..., n_k, d), row t seeing keys j <= t + o
    (every key for o = None), from square or unmasked kernel calls (module docstring). (..., b)."""
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    b, n_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    q = q.expand(*lead, b, d)
    k = k.expand(*lead, n_k, d)
    out = torch.full((*lead, b), -math.inf, dtype=acc, device=q.device)
    if b == 0 or n_k == 0:
        return out
    if o is None:
        return _kernel(q, k, c, False).to(acc)
    s = max(0, -o)  # rows t < -o see no key
    if s >= b:
        return out
    q, o = q[..., s:, :], o + s
    rows = b - s
    L = torch.full((*lead, rows), -math.inf, dtype=acc, device=q.device)
    pre = min(o, n_k)
    if pre > 0:  # keys j < o: seen by every row
        L = _kernel(q, k[..., :pre, :], c, False).to(acc)
    rest = n_k - pre  # keys j >= o: row t sees j - o <= t
    if rest > 0:
        m = min(rows, rest)
        parts = [_kernel(q[..., :m, :], k[..., o:o + m, :], c, True).to(acc)]  # square, top-left
        if rows > m:  # rows t >= m see all `rest` keys
            parts.append(_kernel(q[..., m:, :], k[..., o:, :], c, False).to(acc))
        L = torch.logaddexp(L, torch.cat(parts, dim=-1))
    out[..., s:] = L
    return out


def _as4d(x: Tensor) -> Tensor:
    """(..., n, d) -> (B, H, n, d), the layout the kernels accept; the last axis made unit-stride
    (the CPU kernel reads a strided last axis wrongly)."""
    if x.ndim == 2:
        x = x[None, None]
    elif x.ndim == 3:
        x = x.unsqueeze(0)
    elif x.ndim > 4:
        x = x.reshape(-1, *x.shape[-3:])
    if x.stride(-1) != 1:
        x = x.contiguous()
    return x


def _kernel(q: Tensor, k: Tensor, c: float, is_causal: bool) -> Tensor:
    """The kernel's log-sum-exp of q (..., b, d) against k (..., n_k, d), both of one leading
    shape; ``is_causal`` only on square pieces (b == n_k), where every alignment agrees. (..., b)."""
    lead, b = q.shape[:-2], q.shape[-2]
    q4, k4 = _as4d(q), _as4d(k)
    if q.device.type == "cpu":
        _, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q4, k4, k4, 0.0, is_causal, scale=c)
    elif q.device.type == "cuda":
        q4, k4 = q4.contiguous(), k4.contiguous()
        lse = torch.ops.aten._scaled_dot_product_efficient_attention(
            q4, k4, k4, None, True, 0.0, is_causal, scale=c)[1]
        lse = lse[..., :b]  # padded to a multiple of 32 rows
    else:  # pragma: no cover - _choose admits cpu and cuda only
        raise RuntimeError(f"no fused kernel on {q.device.type}")
    return lse.reshape(*lead, b)
