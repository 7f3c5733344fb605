"""The sizes of a checkpoint's arrays, known without loading it: what memory and time estimates
(:mod:`attnlab.estimates`) of a run through a pretrained model count.

A block of width d with H query heads of size d_h, H_kv key/value heads and a feed-forward of
width d_ff holds

    attention   d H d_h (W_Q) + 2 d H_kv d_h (W_K, W_V) + H d_h d (W_O)
    MLP         2 d d_ff (up, down), 3 d d_ff when gated (SwiGLU: gate, up, down)

matrix entries (biases and norm gains, O(d), are left out). A pass of one sequence of n tokens
through it costs

    2 n (block matrix entries) + 4 n^2 H d_h    floating-point operations

(every matrix entry is one multiply-add per token; the scores Q K^T and the weighted sum P V are
2 n^2 d_h each per head). The embedding table holds vocab x d entries.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSize:
    """The shapes of a transformer checkpoint (see the module docstring for what is counted)."""

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    gated: bool = False

    @classmethod
    def of(cls, architecture) -> "ModelSize":
        """The sizes of an :class:`attnlab.pretrained.Architecture`."""
        a = architecture
        return cls(a.n_layers, a.d_model, a.n_heads, a.kv_heads, a.d_head, a.d_ff, a.vocab_size,
                   gated=a.family == "llama")

    @property
    def block_parameters(self) -> int:
        """Matrix entries of one block: attention and MLP (module docstring)."""
        d, d_h = self.d_model, self.head_dim
        attention = 2 * d * self.n_heads * d_h + 2 * d * self.n_kv_heads * d_h
        return attention + (3 if self.gated else 2) * d * self.d_ff

    @property
    def embedding_parameters(self) -> int:
        """Entries of the token table, vocab x d."""
        return self.vocab_size * self.d_model

    @property
    def parameters(self) -> int:
        """Matrix entries of the embedding and of every block."""
        return self.embedding_parameters + self.n_layers * self.block_parameters

    def block_flops(self, n: int) -> float:
        """Floating-point operations of one block on one sequence of n tokens: 2 n (block entries)
        + 4 n^2 H d_h."""
        return 2.0 * n * self.block_parameters + 4.0 * n * n * self.n_heads * self.head_dim

    def activation_entries(self, n: int) -> int:
        """Entries a block holds at once for one sequence of n tokens: q, k, v, the output and the
        residual (5 n d), the H n x n scores and their softmax, the MLP's hidden (2 n d_ff, 3 when gated)."""
        return 5 * n * self.d_model + 2 * self.n_heads * n * n + (3 if self.gated else 2) * n * self.d_ff


MINILM = ModelSize(n_layers=6, d_model=384, n_heads=12, n_kv_heads=12, head_dim=32, d_ff=1536, vocab_size=30522)
"""all-MiniLM-L6-v2 (the BERT family; 512 positions)."""

SMOLLM2 = ModelSize(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, d_ff=1536, vocab_size=49152,
                    gated=True)
"""SmolLM2-135M-Instruct (the Llama family; grouped-query attention, SwiGLU, tied output head)."""

SHIPPED = {"minilm": MINILM, "smollm2": SMOLLM2}
