"""Dong et al.'s randomly initialised BERT-base, in attnlab's modules, and the inputs it reads.

Dong, Cordonnier, Loukas (2021), residual figure, "BERT at initialization": their notebook builds
``AutoModel.from_config(AutoConfig.from_pretrained("bert-base-cased"))``, a new random draw of
transformers' BertModel, and runs it in float32 on 32 wiki_bio sequences of 128 tokens
(:mod:`attnlab.papers.rank_collapse.dong_figures`). Here the same network is drawn offline:

    transformers.BertModel(transformers.BertConfig())     drawn from torch.manual_seed(seed)

``BertConfig()``'s defaults are bert-base-cased's config.json but for the vocabulary: 12 post-LN
blocks, H = 12 heads of d_head = 64, d = 768, d_ff = 3072, exact (erf) GELU, LayerNorm eps 1e-12,
512 positions, 2 token types, and 30522 WordPiece tokens (bert-base-uncased's; bert-base-cased has
28996). transformers' initialisation (``BertPreTrainedModel._init_weights``): every Linear and
Embedding weight N(0, 0.02^2) (``initializer_range``), every bias 0, LayerNorm gamma = 1, beta = 0
(the [PAD] row of the token table 0). Its state dict is loaded into an attnlab
:class:`~attnlab.nn.transformer.Encoder` by attnlab's BERT loader
(:func:`attnlab.pretrained.bert.architecture`, :func:`~attnlab.pretrained.bert.attnlab_state`,
:func:`attnlab.pretrained.architecture.build_encoder`), so that Dong et al.'s surgery
(:func:`attnlab.papers.rank_collapse.stacks.dong_pass`) cuts attnlab's blocks:

    X_0 = LN_e(W_E[x_i] + W_T[0] + P[i]),   u = LN_1(x + MHA(x)),   z = LN_2(u + GELU(u W_1 + b_1) W_2 + b_2).

The draw uses torch's global generator inside ``torch.random.fork_rng`` (the caller's state is
restored), so a seed fixes every weight.

Under a random initialisation a token is only the index of an i.i.d. N(0, 0.02^2 I) row of W_E:
what an input sequence decides is which of its positions hold the same token. The inputs
(:func:`text_ids`, :func:`random_ids`):

``text``        help topics of pydoc_data.topics tokenized by all-MiniLM-L6-v2's tokenizer (bert-base-
                uncased's WordPiece vocabulary, BertConfig()'s), [CLS] ... [SEP], exactly n tokens each;
``random ids``  [CLS], n - 2 ids uniform over the vocabulary's ordinary tokens (999 .. 30521, past
                [PAD], [unused*], [UNK], [CLS], [SEP], [MASK]), [SEP]: an input with no text, whose
                tokens almost never repeat.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.nn.transformer import Encoder
from attnlab.papers.rank_collapse.stacks import VARIANTS, dong_pass, long_texts, text_batch, with_parts
from attnlab.pretrained import bert
from attnlab.pretrained.architecture import Architecture, build_encoder

INPUTS = ("text", "random ids")
CLS, SEP, FIRST_ORDINARY = 101, 102, 999  # bert-base-uncased's [CLS], [SEP] and first ordinary token ('!')
NOTES_SAN = "SAN (notes)"
"""The notes' SAN, SA_L o ... o SA_1 with no LayerNorm, no skip and no MLP (§2.1): attnlab's
switches :data:`~attnlab.papers.rank_collapse.stacks.VARIANTS` ["SAN"], beside Dong et al.'s SAN,
which keeps LayerNorm."""
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _transformers() -> Any:
    from attnlab.pretrained.minilm import _transformers as load

    return load()


@functools.lru_cache(maxsize=1)
def bert_base_config() -> dict[str, Any]:
    """``transformers.BertConfig()`` as a dict (its defaults: BERT-base, module docstring)."""
    return _transformers().BertConfig().to_dict()


def architecture() -> Architecture:
    """BERT-base's :class:`~attnlab.pretrained.architecture.Architecture`, read from ``BertConfig()`` by
    attnlab's BERT loader."""
    return bert.architecture(bert_base_config(), Path("transformers.BertConfig()"))


def bert_base_random(seed: int, dtype: str = "float32", device: str = "cpu") -> Encoder:
    """transformers' BertModel(BertConfig()) drawn from ``seed`` (its own initialisation), as an attnlab
    Encoder in ``dtype`` ("float32", Dong et al.'s, or "float64") on ``device`` (module docstring)."""
    if dtype not in DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    tf = _transformers()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        drawn = tf.BertModel(tf.BertConfig())
    a = architecture()
    model = build_encoder(a, DTYPES[dtype], device)
    state = bert.attnlab_state(a, drawn.state_dict(), Path(f"BertModel(BertConfig()), seed {seed}"))
    missing, unexpected = model.load_state_dict({k: v.to(DTYPES[dtype]) for k, v in state.items()}, strict=False)
    if unexpected or [k for k in missing if not k.startswith("lm_head")]:
        raise RuntimeError(f"BERT-base's state does not fill attnlab's Encoder: missing {missing}, "
                           f"unexpected {unexpected}")
    return model.eval()


def text_ids(texts: int, tokens: int, seed: int) -> Tensor:
    """(texts, tokens) ids of ``texts`` help topics (the ones rank-collapse.ablations reads, from
    ``seed``), each cut to ``tokens`` tokens of MiniLM's tokenizer, [CLS] and [SEP] included."""
    return text_batch(long_texts(texts, tokens, seed), tokens).input_ids


def random_ids(texts: int, tokens: int, seed: int) -> Tensor:
    """(texts, tokens) ids: [CLS], ``tokens`` - 2 ids uniform over 999 .. vocab - 1, [SEP] (module docstring)."""
    if tokens < 3:
        raise ConfigError(f"tokens must be at least 3 ([CLS], one token, [SEP]), got {tokens}")
    vocab = bert_base_config()["vocab_size"]
    ids = torch.randint(FIRST_ORDINARY, vocab, (texts, tokens), generator=torch.Generator().manual_seed(seed))
    ids[:, 0], ids[:, -1] = CLS, SEP
    return ids


def input_ids(kind: str, texts: int, tokens: int, seed: int) -> Tensor:
    """The ids of input ``kind`` (:data:`INPUTS`)."""
    if kind == "text":
        return text_ids(texts, tokens, seed)
    if kind == "random ids":
        return random_ids(texts, tokens, seed)
    raise ConfigError(f"unknown input {kind!r}: choose one of {', '.join(INPUTS)}")


def embed(model: Encoder, ids: Tensor) -> Tensor:
    """X_0 = LN_e(W_E[x_i] + W_T[0] + P[i]) (B, n, d): token type 0 and positions 0..n-1, as Dong et al.'s
    batch (input_ids and attention_mask only)."""
    with torch.no_grad():
        return model.embed(ids, torch.zeros_like(ids), torch.arange(ids.shape[-1])[None].expand_as(ids))


def states(model: Encoder, ids: Tensor, variant: str, layers: int | None = None) -> list[Tensor]:
    """The hidden states X_0..X_k of BERT-base on ``ids`` under ``variant``: one of Dong et al.'s
    (LayerNorm kept, :func:`~attnlab.papers.rank_collapse.stacks.dong_pass`) or :data:`NOTES_SAN`
    (every part off), through the first ``layers`` blocks (None: all 12). No attention map is kept."""
    X0 = embed(model, ids)
    if variant == NOTES_SAN:
        with with_parts(model, VARIANTS["SAN"]), torch.no_grad():
            hidden = model.encode(X0, output_hidden_states=True).hidden_states
        return hidden if layers is None else hidden[:layers + 1]
    return dong_pass(model, X0, variant, layers=layers, keep_weights=False).hidden_states


__all__ = ["DTYPES", "INPUTS", "NOTES_SAN", "architecture", "bert_base_config", "bert_base_random", "embed",
           "input_ids", "random_ids", "states", "text_ids"]
