"""The layer outputs whose assumptions Tables 1 and 3 test, on offline English text.

memorization-capacity-of-mha §5.1 and App. J: for each layer, contexts E (T, n, d), the outputs at
all n positions of T examples, and queries e (T, d), the [CLS] position (an encoder, a random layer)
or the last position (a decoder). The layers, by name:

    embedding, attention, transformer   random layers on English word ids
                                        (:mod:`attnlab.papers.memorization.token_layers`)
    minilm[-random]-L0, -L1             all-MiniLM-L6-v2's embedding and first layer output, pretrained
                                        or re-initialised, on WordPiece tokens (:mod:`attnlab.pretrained`)
    smollm2[-random]-L0, -L1            SmolLM2's (:mod:`attnlab.papers.memorization.decoder_states`)
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.papers.memorization.decoder_states import (
    DecoderHidden,
    TokenCounts,
    load_smollm2,
    smollm2_variant,
    token_counts,
)
from attnlab.papers.memorization.token_layers import random_layer_outputs
from attnlab.pretrained.sizes import MINILM, SMOLLM2, ModelSize


def word_ids(T: int, n: int, seed: int) -> tuple[np.ndarray, int]:
    """(ids (T, n), V): T English examples of n words (:func:`attnlab.data.english_examples`, drawn
    from ``seed``) as ids of their own vocabulary of V words."""
    from attnlab.data import Vocabulary, english_examples

    ex = english_examples(T, n, seed=seed)
    vocab = Vocabulary.from_examples(ex)
    return vocab.ids(ex), len(vocab)


def random_outputs(layer: str, T: int, n: int, d: int, n_heads: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(E (T, n, d), e (T, d)) of a random layer ("embedding", "attention", "transformer") of width d
    with n_heads heads on T English examples of n words; examples and weights drawn from ``seed``."""
    ids, V = word_ids(T, n, seed)
    out = random_layer_outputs(ids, layer, vocab_size=V, d=d, n_heads=n_heads, seed=seed)
    return out.E, out.e


def minilm_outputs(T: int, n: int, seed: int, pretrained: bool) -> tuple[np.ndarray, np.ndarray]:
    """(L0, L1) hidden states (T, n, 384) of MiniLM on T English examples (WordPiece tokens), the
    checkpoint (pretrained) or its architecture re-initialised from ``seed``."""
    from attnlab.data import english_examples
    from attnlab.pretrained import load_minilm, minilm_hidden_states

    tokenizer, model = load_minilm(pretrained=pretrained, seed=seed)
    ex = english_examples(T, n, seed=seed, tokenize=tokenizer.tokenize)
    h = minilm_hidden_states(tokenizer, model, ex.tokens, ex.segment)
    return h.L0, h.L1


def layer_outputs(layers: tuple[str, ...], *, T: int, n: int, d: int, n_heads: int, seed: int,
                  skipped: dict[str, str] | None = None
                  ) -> Iterator[tuple[str, np.ndarray, np.ndarray, TokenCounts | None]]:
    """Yield (layer, E, e, tokens) for every layer of ``layers`` (tokens: the decoder's
    :class:`TokenCounts`, None for an encoder or a random layer), loading each pretrained model once
    and holding one variant's hidden states at a time; a SmolLM2 layer whose model is not installed is
    left out and its reason put in ``skipped``. d, n_heads: the random layers' width and heads."""
    cache: dict = {}
    for layer in layers:
        if layer.startswith("minilm"):
            pretrained = "random" not in layer
            if ("minilm", pretrained) not in cache:
                for key in [k for k in cache if k != "smollm2"]:
                    del cache[key]
                cache[("minilm", pretrained)] = minilm_outputs(T, n, seed, pretrained)
            H = cache[("minilm", pretrained)][0 if layer.endswith("L0") else 1]
        elif layer.startswith("smollm2"):
            if "smollm2" not in cache:  # the model and the ids, loaded once for both variants
                try:
                    cache["smollm2"] = load_smollm2(T, n, seed)
                except ConfigError as err:
                    cache["smollm2"] = str(err)
            if isinstance(cache["smollm2"], str):
                if skipped is not None:
                    skipped[layer] = cache["smollm2"]
                continue
            pretrained = "random" not in layer
            if ("smollm2", pretrained) not in cache:  # one variant's hidden states at a time
                for key in [k for k in cache if k != "smollm2"]:
                    del cache[key]
                cache[("smollm2", pretrained)] = smollm2_variant(*cache["smollm2"], pretrained, seed)
            h: DecoderHidden = cache[("smollm2", pretrained)]
            H = h.L0 if layer.endswith("L0") else h.L1
            yield layer, H, H[:, -1].copy(), token_counts(h.ids)  # query: the last position (App. J)
            continue
        else:
            H, _ = random_outputs(layer, T, n, d, n_heads, seed)
        yield layer, H, H[:, 0].copy(), None  # query = the [CLS] position


def layer_width(layer: str, d: int) -> int:
    """The width of ``layer``'s output: MiniLM's 384, SmolLM2's 576, else the random layers' d."""
    return {"minilm": MINILM.d_model, "smollm2": SMOLLM2.d_model}.get(layer.split("-")[0], d)


def model_passes_estimate(layers: tuple[str, ...], T: int, n: int, d: int, n_heads: int) -> tuple[Estimate, int]:
    """-> (work, model_bytes): the work of the model passes :func:`layer_outputs` makes for ``layers`` on
    T examples of n tokens (no peak of its own), and the bytes of the weights held meanwhile.

    One pass per MiniLM variant (pretrained, re-initialised: its 6 blocks), per SmolLM2 variant (one
    block) and per random layer with a block on top of the embedding (width d, n_heads heads, d_ff = 4 d),
    each ``T block_flops(n)`` (:mod:`attnlab.pretrained.sizes`); the weights: MiniLM's in float32,
    SmolLM2's embedding and first block in float64, the larger of the two."""
    minilm = {"random" in x for x in layers if x.startswith("minilm")}
    smollm2 = {"random" in x for x in layers if x.startswith("smollm2")}
    random_rows = [x for x in layers if x in ("attention", "transformer")]
    model_bytes = 4 * MINILM.parameters if minilm else 0
    if smollm2:
        model_bytes = max(model_bytes, 8 * (SMOLLM2.embedding_parameters + SMOLLM2.block_parameters))
    random_block = ModelSize(1, d, n_heads, n_heads, d // n_heads, 4 * d, vocab_size=0)
    gemm = T * (len(minilm) * MINILM.n_layers * MINILM.block_flops(n) + len(smollm2) * SMOLLM2.block_flops(n)
                + len(random_rows) * random_block.block_flops(n))
    return Estimate(0, "the model passes", gemm=gemm), model_bytes
