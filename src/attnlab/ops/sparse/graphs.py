"""Attention graphs D of math-behind-transformers §2.1.1, as padded neighbour lists.

Eq. (11) restricts query i to its out-neighbours N(i) in a directed graph D on
{0, ..., n-1}. A graph is stored as a LongTensor ``neighbors`` of shape
(n, w_max) (or (H, n, w_max) for per-head graphs): row i lists N(i) in
increasing order, padded at the end with -1. Duplicates never occur (a random
key that is also in the window counts once). Memory is O(n w_max).

Conventions (one for all builders):

* window of w: N_win(i) = {j : |j - i| <= dilation * (w // 2), (j - i) % dilation == 0}.
  For odd w this is w tokens (w // 2 on each side and i itself). For even w it
  is w + 1 tokens: the text's inequality i - w/2 <= j <= i + w/2 (BigBird
  prose) and "w/2 on each side" (Longformer prose) taken literally, plus i.
* ``causal=True`` keeps the edges j <= i of the same graph (for BigBird the
  same random draw), so a causal graph is a subgraph of the non-causal one.
* global tokens attend to every token and every token attends to them.

Notes on the text. §2.1.1 says Longformer tokens attend to "1/2w tokens on each
side": it means w/2. Its BigBird prose defines the global set G only by
"x_i and x_j for i in G and all j" (one direction); BigBird's global tokens
(and Figure 7(c)) go both ways, which is what makes every pair of tokens at
most two hops apart (claim ``transformer-math.sparse-two-hop``). With global
tokens, a padded list has w_max = n (a global row lists every key), so these
lists are for checks and small n; the O(n (w + r + g)) paths with global rows
computed densely are bigbird_attention / longformer_attention (structured.py,
over pattern.py), and the sliding-window backends of window.py.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from attnlab.errors import ConfigError


def _check_positive(name: str, value: int, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{name} must be an integer >= {least}, got {value!r}")
    return value


def _check_window(n: int, w: int, *, least: int = 1) -> None:
    _check_positive("n", n)
    _check_positive("window w", w, least)
    if w > n:
        raise ConfigError(f"window w={w} is larger than the sequence (n={n}): use w <= n")


def window_offsets(w: int, dilation: int = 1, causal: bool = False) -> Tensor:
    """Offsets j - i of the window: dilation * t for t in -(w//2) .. w//2 (t <= 0 if causal)."""
    if w == 0:
        return torch.zeros(0, dtype=torch.long)  # no window at all
    t = torch.arange(-(w // 2), (0 if causal else w // 2) + 1)
    return t * dilation


def canonical(neighbors: Tensor, n_k: int) -> Tensor:
    """Sort each row, drop duplicates and -1 entries, pad with -1, trim to the widest row."""
    big = torch.where(neighbors < 0, torch.full_like(neighbors, n_k), neighbors)
    s, _ = big.sort(dim=-1)
    dup = torch.zeros_like(s, dtype=torch.bool)
    dup[..., 1:] = s[..., 1:] == s[..., :-1]
    s = s.masked_fill(dup, n_k).sort(dim=-1).values
    width = int((s < n_k).sum(-1).max().item()) if s.numel() else 0
    s = s[..., :width]
    return s.masked_fill(s >= n_k, -1)


def _window_columns(n: int, offsets: Tensor) -> Tensor:
    """(n, len(offsets)) candidate keys i + offset, -1 outside [0, n)."""
    j = torch.arange(n)[:, None] + offsets[None, :]  # (n, w)
    return j.masked_fill((j < 0) | (j >= n), -1)


def _causal(neighbors: Tensor) -> Tensor:
    i = torch.arange(neighbors.shape[-2])[:, None]
    return neighbors.masked_fill(neighbors > i, -1)


def _dilations(dilation: int | Sequence[int]) -> list[int] | None:
    if isinstance(dilation, (list, tuple)):
        if not dilation:
            raise ConfigError("a per-head dilation list needs at least one entry")
        return [_check_positive("dilation", d) for d in dilation]
    _check_positive("dilation", dilation)
    return None


def sliding_window_graph(
    n: int, w: int, *, dilation: int | Sequence[int] = 1, causal: bool = False
) -> Tensor:
    """Sliding (optionally dilated) window graph: (n, w_max), or (H, n, w_max) for a per-head dilation list.

    N(i) = {j in [0, n): |j - i| <= dilation (w // 2), dilation | (j - i)}, and j <= i if causal.
    """
    _check_window(n, w)
    per_head = _dilations(dilation)
    if per_head is not None:
        graphs = [sliding_window_graph(n, w, dilation=d, causal=causal) for d in per_head]
        width = max(g.shape[-1] for g in graphs)
        return torch.stack([_pad(g, width) for g in graphs])  # (H, n, w_max)
    return canonical(_window_columns(n, window_offsets(w, dilation, causal)), n)


def _pad(neighbors: Tensor, width: int) -> Tensor:
    extra = width - neighbors.shape[-1]
    return torch.nn.functional.pad(neighbors, (0, extra), value=-1) if extra > 0 else neighbors


def _random_keys(n: int, r: int, generator: torch.Generator) -> Tensor:
    """(n, r) distinct uniform keys per row: Floyd's sampling, vectorised over rows, O(n r^2)."""
    chosen = torch.empty(n, 0, dtype=torch.long)
    for t in range(n - r, n):
        j = torch.randint(0, t + 1, (n, 1), generator=generator)
        taken = (chosen == j).any(dim=-1, keepdim=True)
        chosen = torch.cat([chosen, torch.where(taken, torch.full_like(j, t), j)], dim=-1)
    return chosen


def _with_globals(neighbors: Tensor, n: int, glob: Tensor) -> Tensor:
    """Add global tokens: every row gets the columns ``glob``, rows ``glob`` get every key."""
    cols = glob[None, :].expand(*neighbors.shape[:-1], -1)
    out = canonical(torch.cat([neighbors, cols], dim=-1), n)
    if glob.numel() == 0:
        return out
    out = _pad(out, n).clone()
    out[..., glob, :] = torch.arange(n)
    return out


def bigbird_graph(
    n: int, *, g: int, w: int, r: int, seed: int, causal: bool = False
) -> Tensor:
    """BigBird graph (Zaheer et al. 2020; math text §2.1.1, Figure 7): (n, w_max).

    N(i) = G ∪ window_w(i) ∪ R(i), and N(i) = all keys for i in G, with
    G = {0, ..., g-1} global tokens, window_w as in the module docstring
    (w = 0: no window) and R(i) r distinct keys drawn uniformly from [0, n) by a
    generator seeded with ``seed`` (the same seed gives the same graph). With
    ``causal`` the edges j > i are removed from that same graph.
    """
    _check_positive("n", n)
    _check_window(n, w, least=0)
    for name, val in (("g (global tokens)", g), ("r (random keys)", r)):
        _check_positive(name, val, least=0)
        if val > n:
            raise ConfigError(f"{name}={val} is larger than the sequence (n={n}): use at most {n}")
    gen = torch.Generator().manual_seed(int(seed))
    cols = [_window_columns(n, window_offsets(w)), _random_keys(n, r, gen)]
    out = _with_globals(torch.cat(cols, dim=-1), n, torch.arange(g))
    return canonical(_causal(out), n) if causal else out


def longformer_graph(
    n: int,
    *,
    w: int,
    dilation: int | Sequence[int] = 1,
    global_tokens: Sequence[int] = (),
    causal: bool = False,
) -> Tensor:
    """Longformer graph (Beltagy et al. 2020; math text §2.1.1, Figure 9).

    Sliding window of w (w // 2 on each side), dilated by ``dilation`` (an int, or
    one per head: then the result is (H, n, w_max)), plus symmetric global
    attention at the positions ``global_tokens``.
    """
    window = sliding_window_graph(n, w, dilation=dilation)
    glob = sorted({int(t) for t in global_tokens})
    bad = [t for t in glob if not 0 <= t < n]
    if bad:
        raise ConfigError(f"global token positions {bad} are outside [0, {n}): use positions 0 .. {n - 1}")
    out = _with_globals(window, n, torch.tensor(glob, dtype=torch.long))
    return canonical(_causal(out), n) if causal else out


def graph_to_mask(neighbors: Tensor, n_k: int) -> Tensor:
    """Boolean (..., n, n_k) mask, True where j in N(i); -1 entries are padding."""
    check_graph(neighbors, n_k)
    mask = torch.zeros(*neighbors.shape[:-1], n_k + 1, dtype=torch.bool, device=neighbors.device)
    idx = torch.where(neighbors < 0, torch.full_like(neighbors, n_k), neighbors)
    mask.scatter_(-1, idx, True)
    return mask[..., :n_k]


def mask_to_graph(mask: Tensor) -> Tensor:
    """Neighbour lists (..., n, w_max) of a boolean (..., n, n_k) mask, w_max = widest row."""
    if mask.dtype != torch.bool:
        raise ConfigError(f"mask_to_graph needs a boolean mask (True = may attend), got {mask.dtype}")
    n_k = mask.shape[-1]
    j = torch.arange(n_k, device=mask.device).expand(mask.shape)
    return canonical(torch.where(mask, j, torch.full_like(j, -1)), n_k)


def max_hops(adjacency: Tensor) -> float:
    """Diameter of a directed graph: the largest shortest-path length over ordered pairs
    i != j, ``inf`` if some j cannot be reached from some i.

    adjacency: boolean (n, n), True at (i, j) for an edge i -> j (a :func:`graph_to_mask`
    mask: query i attends to key j). Breadth-first from every node at once by boolean
    matrix products, reach_t = reach_{t-1} or (reach_{t-1} A), starting from
    reach_1 = I or A; O(n^3) per hop, for checks on small n.
    """
    if adjacency.dtype != torch.bool or adjacency.ndim != 2 or adjacency.shape[0] != adjacency.shape[1]:
        raise ConfigError(f"max_hops needs a square boolean adjacency (n, n), got dtype {adjacency.dtype} "
                          f"and shape {tuple(adjacency.shape)}")
    n = adjacency.shape[-1]
    A = adjacency.to(torch.float32)  # (reach @ A)_ij counts <= n edges: exact in float32
    reach = torch.eye(n, dtype=torch.bool, device=adjacency.device) | adjacency  # (n, n)
    hops = 1
    while not bool(reach.all()):
        grown = reach | ((reach.to(torch.float32) @ A) > 0)
        if torch.equal(grown, reach):  # nothing new is reachable: some pair never will be
            return float("inf")
        reach, hops = grown, hops + 1
    return float(hops)


def check_graph(neighbors: Tensor, n_k: int) -> None:
    """Raise a ConfigError unless ``neighbors`` is an integer list of keys in [-1, n_k)."""
    if neighbors.dtype not in (torch.int64, torch.int32) or neighbors.ndim < 2:
        raise ConfigError(
            f"neighbors must be an integer tensor (..., n, w_max) of key indices, "
            f"got dtype {neighbors.dtype} with {neighbors.ndim} axes"
        )
    if neighbors.numel() and (int(neighbors.min()) < -1 or int(neighbors.max()) >= n_k):
        raise ConfigError(
            f"neighbour indices must lie in [0, {n_k}) (or be -1 for padding), "
            f"got values in [{int(neighbors.min())}, {int(neighbors.max())}]"
        )
