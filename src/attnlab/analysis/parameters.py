"""Closed-form parameter counts (math-behind-transformers §1.2.2 and §2).

One block of §1.2.2 with d = d_model, H heads of width k = d_head (d_v = k), m = d_ff:

    attention  4 H d k  (W_Q, W_K, W_V, W_O)  + 3 H k + d   (b_Q, b_K, b_V, b_O)
    FFN        2 d m                          + m + d       (b_1 in R^m, b_2 in R^d)
    LayerNorm  2 x 2 d                                      (gamma, beta)

so with H k = d a block has 12 d^2 + 13 d parameters when m = 4d. A decoder
block adds a cross-attention and a third LayerNorm. The functions below count
exactly what :mod:`attnlab.nn` builds (tests compare with sum(p.numel())), and
the decoder-only / encoder-only variants count GPT and BERT as published
(Table 1 of the text is recomputed from them in
:mod:`attnlab.papers.transformer_math.table1`).
"""

from __future__ import annotations

from attnlab.errors import ConfigError


def _positive(**sizes: int) -> None:
    for name, v in sizes.items():
        if not isinstance(v, int) or v <= 0:
            raise ConfigError(f"{name} must be a positive integer, got {v!r}")


def attention_parameters(
    d_model: int, n_heads: int, d_head: int, d_v: int | None = None, *, bias: bool = True,
    n_kv_heads: int | None = None,
) -> int:
    """d (H d_head + H_kv d_head + H_kv d_v) + H d_v d weights, H d_head + H_kv (d_head + d_v) + d biases.

    W_Q (H, d, d_head), W_K (H_kv, d, d_head), W_V (H_kv, d, d_v), W_O (H, d_v, d).

    ``n_kv_heads`` < n_heads counts shared key/value heads (multi-query: 1).
    """
    d_v = d_head if d_v is None else d_v
    H_kv = n_heads if n_kv_heads is None else n_kv_heads
    _positive(d_model=d_model, n_heads=n_heads, d_head=d_head, d_v=d_v, n_kv_heads=H_kv)
    weights = d_model * (n_heads * d_head + H_kv * d_head + H_kv * d_v) + n_heads * d_v * d_model
    biases = n_heads * d_head + H_kv * (d_head + d_v) + d_model
    return weights + (biases if bias else 0)


def ffn_parameters(d_model: int, d_ff: int, *, bias: bool = True, gated: bool = False) -> int:
    """2 d m + m + d; a gated FFN (GLU family: GEGLU, SwiGLU) has a third d x m matrix."""
    _positive(d_model=d_model, d_ff=d_ff)
    n_in = 2 if gated else 1
    return (n_in + 1) * d_model * d_ff + ((n_in * d_ff + d_model) if bias else 0)


def layernorm_parameters(d_model: int, *, bias: bool = True) -> int:
    """gamma (and beta) in R^d."""
    return 2 * d_model if bias else d_model


def block_parameters(
    d_model: int, n_heads: int, d_head: int, d_ff: int, bias: bool = True, norm: bool = True
) -> int:
    """One encoder block (§1.2.2): MHA + FFN + two LayerNorms."""
    return (
        attention_parameters(d_model, n_heads, d_head, bias=bias)
        + ffn_parameters(d_model, d_ff, bias=bias)
        + (2 * layernorm_parameters(d_model) if norm else 0)
    )


def decoder_block_parameters(
    d_model: int, n_heads: int, d_head: int, d_ff: int, bias: bool = True, norm: bool = True
) -> int:
    """One decoder block (§1.2.5): masked MHA + cross MHA + FFN + three LayerNorms."""
    return (
        2 * attention_parameters(d_model, n_heads, d_head, bias=bias)
        + ffn_parameters(d_model, d_ff, bias=bias)
        + (3 * layernorm_parameters(d_model) if norm else 0)
    )


def encoder_decoder_parameters(
    src_vocab_size: int, tgt_vocab_size: int, d_model: int, n_heads: int, d_ff: int, n_layers: int,
    *, d_head: int | None = None, n_decoder_layers: int | None = None, bias: bool = True,
    tie_embeddings: bool = False, norm_position: str = "post", positional: str = "sinusoidal",
    max_len: int = 512,
) -> int:
    """:class:`attnlab.nn.EncoderDecoder`: embeddings W^E (l x d) each side, L encoder and decoder
    blocks, output projection P (d x l_tgt) unless tied to W^E_tgt, learned positions (max_len x d)
    per side if ``positional="learned"``, and a final LayerNorm per stack for pre-LN.
    """
    _positive(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, n_layers=n_layers)
    if norm_position not in ("post", "pre"):
        raise ConfigError(f"norm_position must be 'post' or 'pre', got {norm_position!r}")
    if positional not in ("sinusoidal", "learned"):
        raise ConfigError(f"positional must be 'sinusoidal' or 'learned', got {positional!r}")
    d_head = _default_d_head(d_model, n_heads, d_head)
    L_dec = n_layers if n_decoder_layers is None else n_decoder_layers
    total = (
        n_layers * block_parameters(d_model, n_heads, d_head, d_ff, bias)
        + L_dec * decoder_block_parameters(d_model, n_heads, d_head, d_ff, bias)
        + (src_vocab_size + tgt_vocab_size) * d_model
        + (0 if tie_embeddings else d_model * tgt_vocab_size)
    )
    if positional == "learned":
        total += 2 * max_len * d_model
    if norm_position == "pre":
        total += 2 * layernorm_parameters(d_model)
    return total


def decoder_only_parameters(
    n_layers: int, d_model: int, n_heads: int, d_head: int, d_ff: int, vocab_size: int, *,
    n_positions: int = 0, bias: bool = True, gated_ffn: bool = False, n_kv_heads: int | None = None,
    norms_per_layer: int = 2, norm_bias: bool = True, final_norm: bool = True, tied: bool = True,
    embeddings: bool = True,
) -> int:
    """A stack of L decoder-only blocks (self-attention + FFN, no cross-attention).

    Covers GPT-1/2/3 (learned positions, tied output), LaMDA (gated-GELU, relative
    positions) and PaLM (multi-query, SwiGLU, parallel block with one LayerNorm,
    no biases, RoPE). ``embeddings=False`` counts non-embedding parameters only.
    """
    _positive(n_layers=n_layers, vocab_size=vocab_size)
    per_layer = (
        attention_parameters(d_model, n_heads, d_head, bias=bias, n_kv_heads=n_kv_heads)
        + ffn_parameters(d_model, d_ff, bias=bias, gated=gated_ffn)
        + norms_per_layer * layernorm_parameters(d_model, bias=norm_bias)
    )
    total = n_layers * per_layer + (layernorm_parameters(d_model, bias=norm_bias) if final_norm else 0)
    if embeddings:
        total += (vocab_size + n_positions) * d_model + (0 if tied else d_model * vocab_size)
    return total


def gpt_parameters(
    n_layers: int, d_model: int, n_heads: int, d_ff: int, vocab_size: int, n_positions: int, *,
    d_head: int | None = None, final_norm: bool = True, tied: bool = True,
) -> int:
    """GPT-style decoder-only model: token + learned position embeddings, L blocks (biases, two
    LayerNorms each), a final LayerNorm (GPT-2/3; GPT-1 has none), output tied to W^E."""
    return decoder_only_parameters(
        n_layers, d_model, n_heads, _default_d_head(d_model, n_heads, d_head), d_ff, vocab_size,
        n_positions=n_positions, final_norm=final_norm, tied=tied,
    )


def bert_parameters(
    n_layers: int, d_model: int, n_heads: int, d_ff: int, vocab_size: int, n_positions: int,
    n_token_types: int = 2, *, d_head: int | None = None, pooler: bool = True, mlm_head: bool = False,
) -> int:
    """BERT encoder-only model: token, position and token-type embeddings + LayerNorm, L post-LN
    blocks, the pooler (d x d + d) and optionally the MLM head (d x d + d, LayerNorm, output bias;
    its output matrix is tied to the token embedding)."""
    _positive(vocab_size=vocab_size, n_positions=n_positions, n_token_types=n_token_types)
    total = (
        n_layers * block_parameters(d_model, n_heads, _default_d_head(d_model, n_heads, d_head), d_ff)
        + (vocab_size + n_positions + n_token_types) * d_model
        + layernorm_parameters(d_model)
    )
    if pooler:
        total += d_model * d_model + d_model
    if mlm_head:
        total += d_model * d_model + d_model + layernorm_parameters(d_model) + vocab_size
    return total


def _default_d_head(d_model: int, n_heads: int, d_head: int | None) -> int:
    _positive(d_model=d_model, n_heads=n_heads)
    if d_head is not None:
        return d_head
    if d_model % n_heads:
        raise ConfigError(f"d_model={d_model} is not divisible by n_heads={n_heads}: pass d_head")
    return d_model // n_heads
