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
"""

from __future__ import annotations

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
MODELS = ("pretrained", "random", "attnlab-12")
BERT_INIT_STD = 0.02  # transformers' initializer_range for BERT and MiniLM


@functools.lru_cache(maxsize=2)
def minilm(device: str = "cpu") -> PretrainedModel:
    """all-MiniLM-L6-v2 in float64 on ``device`` (loaded once per process and device)."""
    return load_pretrained("minilm", dtype=torch.float64, device=device)


def _fill(model: Encoder, std_of, g: torch.Generator) -> Encoder:
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
    d, H = arch.d_model, arch.n_heads

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


def long_texts(count: int, n: int, seed: int) -> list[str]:
    """``count`` distinct help topics of pydoc_data.topics with at least n MiniLM tokens, in the
    order of a permutation drawn from ``seed`` (whitespace collapsed)."""
    from pydoc_data.topics import topics

    tok = minilm("cpu").tokenizer
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


def text_batch(texts: Sequence[str], n: int, device: str = "cpu") -> Batch:
    """Tokenize ``texts`` with MiniLM's tokenizer, each cut to n tokens ([CLS] ... [SEP] included).

    Every text must have at least n tokens, so no sequence is padded and every hidden state
    is an n x d matrix of real tokens.
    """
    pm = minilm(device)
    e = pm.encode(list(texts), max_tokens=n)
    if e.input_ids.shape[-1] != n or bool(e.key_padding_mask.any()):
        short = int((~e.key_padding_mask).sum(-1).min())
        raise ConfigError(f"a text has only {short} tokens, fewer than n={n}: use a smaller n (tokens)")
    with torch.no_grad():
        X0 = pm.model.embed(e.input_ids, e.token_type_ids, e.position_ids)
    return Batch(e.input_ids, e.token_type_ids, e.position_ids, X0)


def build_model(model_name: str, seed: int, device: str = "cpu") -> Encoder:
    """The Encoder of ``model_name`` (:data:`MODELS`); the random ones drawn from ``seed``."""
    if model_name == "pretrained":
        return minilm(device).model
    if model_name == "random":
        return bert_random(seed, device)
    if model_name == "attnlab-12":
        return attnlab_stack(seed, 12, device)
    raise ConfigError(f"unknown model {model_name!r}: choose one of {', '.join(MODELS)}")


def run_model(model_name: str, model: Encoder, batch: Batch,
              parts: BlockParts | None = None) -> TransformerOutput:
    """One pass of ``model`` (built by :func:`build_model` for ``model_name``) with ``parts`` on
    every block (None: as the model is): every hidden state X_0..X_L (B, n, d) and every head's
    weights P_1..P_L (B, H, n, n). ``attnlab-12`` starts from ``batch.X0``, the others from tokens."""
    parts = model.parts if parts is None else parts
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


def run_dong(model_name: str, model: Encoder, batch: Batch, variant: str) -> TransformerOutput:
    """One pass of ``model`` with Dong et al.'s surgery ``variant`` (:data:`DONG_VARIANTS`) on every
    block: every hidden state X_0..X_L (B, n, d) and every head's weights (B, H, n, n)."""
    if variant not in DONG_VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}: choose one of {', '.join(DONG_VARIANTS)}")
    if any(getattr(b, "norm_position", "post") != "post" for b in model.blocks):
        raise ConfigError("Dong et al.'s surgery is defined for post-LN blocks")
    with torch.no_grad():
        X = batch.X0 if model_name == "attnlab-12" else model.embed(batch.input_ids, batch.token_type_ids,
                                                                     batch.position_ids)
        hidden, weights = [X], []
        for block in model.blocks:
            X, w = dong_block(block, X, variant)
            hidden.append(X)
            weights.append(w)
    return TransformerOutput(X, hidden, weights)


__all__ = ["BERT_INIT_STD", "Batch", "DONG_VARIANTS", "MODELS", "VARIANTS", "attnlab_stack", "bert_random",
           "build_model", "dong_block", "long_texts", "minilm", "run_dong", "run_model", "text_batch", "with_parts"]
