"""Attention maps as the head analyses read them, and the token labels they use.

An attention map A has shape (..., n, n): the leading axes are anything (documents,
layers, heads), the last two are (query, key). Rows are queries and are distributions
over keys, a_ij >= 0 and sum_j a_ij = 1 (row-stochastic). "Previous token" is therefore
the subdiagonal a_{i,i-1} and "next token" the superdiagonal a_{i,i+1}: query i
looking one step to the right.

Self-attention only: query i and key i are the same token, so n_q = n_k = n.

key_padding_mask: bool (..., n), True marks a padding token (the convention of
:mod:`attnlab.ops.masks`); like every per-position input (token ids, key sets,
segments) its leading axes start the maps' leading axes, so (B, n) serves maps
(B, L, H, n, n) (:func:`per_position`). A padding
token is neither a key (its column is left out) nor a query (its row is left out of
every average). ``causal=True`` says the model could only attend to keys j <= i: it
changes which keys a row could have used (the uniform baseline, the smoothing of
the entropy, the offsets that exist), never the weights.

Every function reads its input and never writes to it: the maps are converted to a
float64 copy first (:func:`as_maps`).
"""

from __future__ import annotations

import weakref
from typing import Iterable, Sequence

import torch
from torch import Tensor

from attnlab.config import check_int
from attnlab.errors import ConfigError

ROW_SUM_TOL = 1e-2  # loose enough for float16 maps (Clark et al. store theirs so), tight enough for unnormalised ones
CLARK_PUNCTUATION = (".", ",")  # the "punctuation" of Clark et al.'s General_Analysis.ipynb
BERT_SPECIAL_TOKENS = ("[CLS]", "[SEP]")


def as_maps(A, *, name: str = "A", check_rows: bool = True) -> Tensor:
    """A float64 copy of A (..., n, n), checked: finite, non-negative, square, and (with
    ``check_rows``) rows summing to 1 within ROW_SUM_TOL. Padded rows are checked too;
    give them any distribution (a model's padded rows usually are one).

    A tensor that passed (and the copy made of it) is remembered until it is changed in
    place or freed, so the several analyses of one set of maps check it once."""
    A = torch.as_tensor(A)
    if _passed(A, check_rows):
        return A.detach().to(torch.float64, copy=True)
    given = A
    A = A.detach()
    if A.ndim < 2 or A.shape[-1] != A.shape[-2] or A.shape[-1] < 1:
        raise ConfigError(f"{name} must be self-attention maps of shape (..., n, n), got {tuple(A.shape)}")
    if not (A.is_floating_point() and bool(torch.isfinite(A).all())):
        raise ConfigError(f"{name} must hold finite real weights (a float tensor), got dtype {A.dtype}")
    A = A.to(torch.float64, copy=True)
    if bool((A < 0).any()):
        raise ConfigError(f"{name} has negative weights (min {A.min().item():.3g}): pass softmax outputs, not logits")
    if check_rows:
        worst = (A.sum(-1) - 1).abs().max().item()
        if worst > ROW_SUM_TOL:
            raise ConfigError(f"the rows of {name} must sum to 1 (rows are queries); the worst is off by "
                              f"{worst:.3g}: pass softmax weights, or the transpose if columns are queries")
    _remember(given, check_rows)
    _remember(A, check_rows)
    return A


_PASSED: dict[int, tuple] = {}  # id -> (weak reference, version counter, rows checked) of maps as_maps accepted


def _remember(A: Tensor, check_rows: bool) -> None:
    try:
        version = A._version
        ref = weakref.ref(A, lambda _, key=id(A): _PASSED.pop(key, None))
    except (RuntimeError, TypeError):  # inference tensors have no version counter
        return
    _PASSED[id(A)] = (ref, version, check_rows)


def _passed(A: Tensor, check_rows: bool) -> bool:
    entry = _PASSED.get(id(A))
    if entry is None or entry[0]() is not A or (check_rows and not entry[2]):
        return False
    try:
        return A._version == entry[1]
    except RuntimeError:
        return False


def per_position(x, A: Tensor, *, name: str) -> Tensor:
    """A per-position tensor x (..., n) aligned with the maps A (..., n, n) from the LEFT and
    expanded to A.shape[:-2] + (n,): x (n,) is shared by every map, x (B, n) with maps
    (B, L, H, n, n) is read as (B, 1, 1, n), the way key_padding_mask (B, n_k) works in
    :mod:`attnlab.ops.masks`."""
    x = torch.as_tensor(x)
    n, lead = A.shape[-1], A.ndim - 2
    if x.ndim < 1 or x.shape[-1] != n or x.ndim - 1 > lead or tuple(x.shape[:-1]) != tuple(A.shape[: x.ndim - 1]):
        raise ConfigError(f"{name} must have shape (..., n={n}) whose leading axes start the maps' leading axes "
                          f"{tuple(A.shape[:-2])} (e.g. (n,) or (B, n) for maps (B, L, H, n, n)), "
                          f"got {tuple(x.shape)}")
    x = x.reshape(tuple(x.shape[:-1]) + (1,) * (lead - x.ndim + 1) + (n,))
    return x.expand(tuple(A.shape[:-2]) + (n,))


def real_tokens(A: Tensor, key_padding_mask=None) -> Tensor:
    """bool (..., n) = A.shape[:-2] + (n,): True for a real (non-padding) token."""
    n = A.shape[-1]
    if key_padding_mask is None:
        return torch.ones(tuple(A.shape[:-2]) + (n,), dtype=torch.bool)
    m = torch.as_tensor(key_padding_mask)
    if m.dtype != torch.bool:
        raise ConfigError(f"key_padding_mask must be boolean (True = padding), got dtype {m.dtype}")
    real = ~per_position(m, A, name="key_padding_mask")
    if not bool(real.any(-1).all()):
        raise ConfigError("key_padding_mask marks every token of some map as padding; leave at least one real token")
    return real


def visible_keys(A: Tensor, real: Tensor, causal: bool) -> Tensor:
    """bool (..., n, n): key j is a real token (and j <= i when ``causal``)."""
    n = A.shape[-1]
    allowed = real[..., None, :].expand(A.shape)
    if causal:
        allowed = allowed & torch.ones(n, n, dtype=torch.bool).tril()
    return allowed


def uniform_attention(n: int, *, causal: bool = False, key_padding_mask=None) -> Tensor:
    """U (n, n) float64 (or (..., n, n) with a key-padding mask (..., n)): uniform attention over the
    keys a row could attend, u_ij = 1/|K_i| for j in K_i (the real keys, and j <= i when ``causal``).

    Every score read on U is that score's chance level under the same mask: what a head that
    looks nowhere in particular gets (bidirectional: 1/n per key; causal: 1/(i + 1) on row i).
    A padded row is uniform over the real keys, so U stays row-stochastic."""
    check_int("n", n, 1)
    shape = (n, n) if key_padding_mask is None else tuple(torch.as_tensor(key_padding_mask).shape[:-1]) + (n, n)
    Z = torch.zeros(shape, dtype=torch.float64)
    real = real_tokens(Z, key_padding_mask)
    vis = visible_keys(Z, real, causal)
    vis = torch.where(vis.any(-1, keepdim=True), vis, real[..., None, :])  # a causal row before any real key
    return vis.to(torch.float64) / vis.sum(-1, keepdim=True).to(torch.float64)


def row_mean(x: Tensor, rows: Tensor) -> Tensor:
    """Mean of x (..., n) over the rows where ``rows`` (..., n) is True; NaN where none is."""
    rows = rows.expand(x.shape)
    count = rows.sum(-1)
    total = torch.where(rows, x, torch.zeros((), dtype=x.dtype)).sum(-1)
    return torch.where(count > 0, total / count.clamp_min(1), torch.full_like(total, float("nan")))


def positions_mask(n: int, positions: Iterable[int], *, name: str = "positions") -> Tensor:
    """bool (n,): True at the given positions (negative ones count from the end)."""
    out = torch.zeros(n, dtype=torch.bool)
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int) or not -n <= p < n:
            raise ConfigError(f"{name} must be integers in [-{n}, {n}), got {p!r}")
        out[p] = True
    return out


def token_mask(tokens: Sequence[str] | Sequence[Sequence[str]], vocabulary: Iterable[str]) -> Tensor:
    """bool (n,) (or (B, n) for a list of token lists): True where the token is in ``vocabulary``,
    e.g. token_mask(tokens, BERT_SPECIAL_TOKENS) or token_mask(tokens, CLARK_PUNCTUATION)."""
    vocab = set(vocabulary)
    if tokens and not isinstance(tokens[0], str):
        rows = [[t in vocab for t in row] for row in tokens]
        if len({len(r) for r in rows}) > 1:
            raise ConfigError("token lists of one batch must have the same length (pad them)")
        return torch.tensor(rows, dtype=torch.bool)
    return torch.tensor([t in vocab for t in tokens], dtype=torch.bool)


def key_set(A: Tensor, keys, *, name: str) -> Tensor:
    """A set of key columns as bool A.shape[:-2] + (n,), from a bool mask (..., n) (aligned as in
    :func:`per_position`) or a sequence of positions shared by every map."""
    if isinstance(keys, Tensor) and keys.dtype == torch.bool:
        return per_position(keys, A, name=name)
    positions = keys.tolist() if isinstance(keys, Tensor) else keys
    if isinstance(positions, (int, str)) or not isinstance(positions, Iterable):
        raise ConfigError(f"{name} must be a boolean mask (..., n) or a list of positions, got {keys!r}")
    return positions_mask(A.shape[-1], positions, name=name).expand(tuple(A.shape[:-2]) + (A.shape[-1],))


def token_ids(tokens, A: Tensor, *, name: str = "tokens") -> Tensor:
    """Token ids (or any integer label per position) as int64 A.shape[:-2] + (n,), aligned as in
    :func:`per_position`: tokens (B, n) with maps (B, L, H, n, n) are read as (B, 1, 1, n)."""
    t = torch.as_tensor(tokens)
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise ConfigError(f"{name} must be integer ids (..., n), got dtype {t.dtype}")
    return per_position(t.to(torch.int64), A, name=name)
