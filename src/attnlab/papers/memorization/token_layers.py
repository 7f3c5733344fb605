"""The random layers whose outputs memorization-capacity-of-mha §5.1 tests (Table 1), built from attnlab.nn.

§3 (positional encoding) and §5.1, models 1)-3), for token sequences (T examples of n tokens):

    embedding:    E0^(t)_i = W_emb[x_i^(t)] + P[i]                       (n, d); P sinusoidal, eq. (1)
                  of math-behind-transformers; W_emb (V, d) iid N(0, 1)
    attention:    E1 = E0 + MHA(LN(E0))                                  self-attention with skip, no FCN
    transformer:  E1 = TransformerBlock(E0)                              one full block (MHA + FFN)

Both layers are pre-LN, as in ViT (the model §5.1 tests). Query e^(t) = row 0 of the output (the [CLS]
position, App. J), context E^(t) = the whole output. Every layer draws its weights from its own seed
(torch's global generator is forked, so nothing outside changes) and runs in float64, so rank
decisions at rtol 1e-10 are about the maths, not float32 round-off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from attnlab.config import check_seed
from attnlab.errors import ConfigError
from attnlab.nn import (
    BlockConfig,
    LayerNorm,
    MultiHeadAttention,
    SinusoidalPositionalEncoding,
    TransformerBlock,
    sinusoidal_encoding,
)

LAYERS = ("embedding", "attention", "transformer")


@dataclass(frozen=True)
class TokenLayerOutputs:
    """E: (T, n, d) contexts E^(t); e: (T, d) queries e^(t) = E^(t)[0] (the [CLS] position)."""

    E: np.ndarray
    e: np.ndarray


class RandomEmbedding(nn.Module):
    """Token ids (..., n) -> W_emb[ids] + P[:n] (..., n, d), W_emb (V, d) ~ N(0, 1), P sinusoidal."""

    def __init__(self, vocab_size: int, d: int, *, max_len: int = 512, seed: int = 0):
        super().__init__()
        if vocab_size < 1 or d < 2 or d % 2:
            raise ConfigError(f"need vocab_size >= 1 and an even d >= 2, got vocab_size={vocab_size}, d={d}")
        gen = torch.Generator().manual_seed(check_seed(seed))
        self.W_emb = nn.Parameter(torch.randn(vocab_size, d, generator=gen, dtype=torch.float64))
        self.pos = SinusoidalPositionalEncoding(d, max_len=max_len)

    def forward(self, ids: Tensor) -> Tensor:
        if ids.dtype != torch.int64 or int(ids.min()) < 0 or int(ids.max()) >= self.W_emb.shape[0]:
            raise ConfigError(f"token ids must be int64 in [0, {self.W_emb.shape[0]}) for this embedding table")
        return self.pos(self.W_emb[ids])  # (..., n, d)


class RandomAttentionLayer(nn.Module):
    """E -> E + MHA(LN(E)): pre-LN self-attention with skip connection and no FCN (§5.1, model 2)."""

    def __init__(self, d: int, n_heads: int, *, seed: int = 0):
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(check_seed(seed))
            self.norm = LayerNorm(d, "standard")
            self.attn = MultiHeadAttention(d, n_heads)
        self.double()

    def forward(self, E: Tensor) -> Tensor:
        """E: (B, n, d) -> (B, n, d)."""
        return E + self.attn(self.norm(E)).output


class RandomTransformerLayer(nn.Module):
    """One pre-LN transformer block, MHA + FFN (d_ff = 4 d), each with skip (§5.1, model 3)."""

    def __init__(self, d: int, n_heads: int, *, d_ff: int | None = None, seed: int = 0):
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(check_seed(seed))
            self.block = TransformerBlock(d, n_heads, d_ff or 4 * d, BlockConfig(norm="standard", norm_position="pre"))
        self.double()

    def forward(self, E: Tensor) -> Tensor:
        """E: (B, n, d) -> (B, n, d)."""
        return self.block(E).output


def sinusoidal_rank(n: int, d: int, *, rtol: float = 1e-10) -> int:
    """Numerical rank of the sinusoidal P[:n] (n, d): #{sigma_i > rtol sigma_1}.

    §4.4 argues P is "inherently full rank", so E^(t) = X^(t) + P has rank n (Assumption 2). In exact
    arithmetic it is; numerically P's columns are band-limited in t (frequencies w_k <= 1 rad per
    position), so its singular values decay fast: at d = 384, rank 36 of n = 64 at rtol 1e-10. Contexts
    where one token repeats many times inherit that deficiency."""
    s = np.linalg.svd(sinusoidal_encoding(n, d, dtype=torch.float64).numpy(), compute_uv=False)  # (min(n, d),)
    return int((s > rtol * s[0]).sum())


def random_layer_outputs(ids, layer: str, *, vocab_size: int, d: int, n_heads: int, seed: int = 0,
                         batch: int = 256) -> TokenLayerOutputs:
    """Run token ids (T, n) through the random embedding and, for ``layer`` = "attention" or
    "transformer", one random layer on top; -> contexts E (T, n, d) and queries e = E[:, 0] (T, d).

    The embedding uses ``seed``, the layer on top ``seed + 1``, so "attention" and "transformer" see
    the same embedding output."""
    if layer not in LAYERS:
        raise ConfigError(f"unknown layer {layer!r}: choose one of {', '.join(LAYERS)}")
    ids = torch.as_tensor(np.asarray(ids), dtype=torch.int64)
    if ids.ndim != 2 or ids.shape[1] < 1:
        raise ConfigError(f"token ids must be a (T, n) array, got shape {tuple(ids.shape)}")
    if d % n_heads:
        raise ConfigError(f"d={d} must be divisible by n_heads={n_heads}")
    emb = RandomEmbedding(vocab_size, d, max_len=max(512, ids.shape[1]), seed=seed)
    top = {"embedding": nn.Identity(), "attention": RandomAttentionLayer(d, n_heads, seed=seed + 1),
           "transformer": RandomTransformerLayer(d, n_heads, seed=seed + 1)}[layer]
    with torch.no_grad():
        E = torch.cat([top(emb(ids[i:i + batch])) for i in range(0, ids.shape[0], batch)])  # (T, n, d)
    E = E.numpy()
    return TokenLayerOutputs(E, E[:, 0].copy())
