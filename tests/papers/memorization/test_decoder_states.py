"""The decoder's first hidden states (papers/memorization/decoder_states.py): token counts by hand, the
Llama family's re-initialisation, and the one-block pass against the stack's own forward pass on a tiny
Llama-family architecture (d = 12, 3 query heads, 1 key-value head, vocabulary 17)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.memorization.decoder_states import (
    INIT_STD,
    first_block_states,
    reinitialise,
    smollm2_ids,
    token_counts,
)
from attnlab.pretrained.architecture import Architecture, build_encoder
from tolerances import FLOAT64

TINY_LLAMA = Architecture(family="llama", model_type="llama", d_model=12, n_heads=3, d_ff=20, n_layers=1,
                          vocab_size=17, max_len=32, type_vocab_size=0, eps=1e-5, activation="silu",
                          scales=(1 / math.sqrt(4),), n_kv_heads=1, head_dim=4, rope_base=10000.0,
                          qkv_bias=False, o_bias=False)


def test_token_counts_by_hand():
    ids = np.array([[1, 2, 3, 4],    # all distinct
                    [5, 5, 6, 4],    # leading repeat, 3 distinct, ends in 4 as the first
                    [7, 8, 7, 9]])   # 3 distinct
    c = token_counts(ids)
    assert (c.n, c.examples, c.examples_all_distinct, c.min_distinct) == (4, 3, 1, 3)
    assert abs(c.mean_distinct - 10 / 3) < FLOAT64
    assert (c.distinct_last_tokens, c.leading_repeats) == (2, 1)
    assert list(c.to_dict()) == ["n", "examples_all_distinct", "min_distinct", "mean_distinct",
                                 "distinct_last_tokens", "examples", "leading_repeats"]


def test_reinitialise_draws_matrices_from_the_seed_and_resets_gains_and_biases():
    model = reinitialise(build_encoder(TINY_LLAMA, torch.float64, "cpu"), seed=3)
    again = reinitialise(build_encoder(TINY_LLAMA, torch.float64, "cpu"), seed=3)
    other = reinitialise(build_encoder(TINY_LLAMA, torch.float64, "cpu"), seed=4)
    params, matrices = dict(model.named_parameters()), []
    for name, p in params.items():
        q = dict(again.named_parameters())[name]
        assert torch.equal(p, q), name  # the same seed draws the same weights
        if name.endswith("gamma"):
            assert torch.all(p == 1.0), name
        elif p.ndim == 1 or name.split(".")[-1].startswith("b_"):
            assert torch.all(p == 0.0), name
        else:
            matrices.append(p.flatten())
    W = torch.cat(matrices)  # every matrix entry, N(0, 0.02^2)
    # 1308 entries: the sample std is within 2% (one standard error) of 0.02, the mean within 6e-4
    assert W.numel() == 1308 and abs(W.std().item() - INIT_STD) < 0.1 * INIT_STD and abs(W.mean().item()) < 2e-3
    assert not torch.equal(model.embed.W_E, other.embed.W_E)


def test_first_block_states_equal_the_stacks_forward_pass():
    model = reinitialise(build_encoder(TINY_LLAMA, torch.float64, "cpu"), seed=0)
    ids = np.random.default_rng(0).integers(0, 17, size=(7, 5))
    h = first_block_states(model, ids, batch=3)  # batches of 3, 3, 1 examples
    assert h.L0.shape == h.L1.shape == (7, 5, 12) and h.ids is ids
    with torch.no_grad():
        ref = model(torch.from_numpy(ids), output_hidden_states=True).hidden_states
    np.testing.assert_allclose(h.L0, ref[0].numpy(), rtol=0, atol=0)  # X_0 = W_E[x]: no position vector
    np.testing.assert_allclose(h.L1, ref[1].numpy(), rtol=0, atol=FLOAT64)
    np.testing.assert_allclose(h.L0, model.embed.W_E.detach().numpy()[ids], rtol=0, atol=0)
    # causal: position 0's output depends on token 0 only
    ids2 = ids.copy()
    ids2[:, 1:] = (ids2[:, 1:] + 1) % 17
    np.testing.assert_allclose(first_block_states(model, ids2).L1[:, 0], h.L1[:, 0], rtol=0, atol=FLOAT64)


class _WordTokenizer:
    """A stand-in for SmolLM2's tokenizer: words to ids of a fixed table; unknown words to <unk> (id 0)."""

    unk_token_id = 0

    def __init__(self, known: set[str] | None = None) -> None:
        self.known = known

    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        return [0 if self.known is not None and t not in self.known else 1 + sum(map(ord, t)) for t in tokens]


def test_smollm2_ids_from_a_tokenizer():
    ids = smollm2_ids(_WordTokenizer(), 6, 5, seed=1)
    assert ids.shape == (6, 5) and ids.dtype == np.int64 and (ids > 0).all()
    assert np.array_equal(ids, smollm2_ids(_WordTokenizer(), 6, 5, seed=1))
    with pytest.raises(ConfigError, match="mapped a token of its own output to <unk>"):
        smollm2_ids(_WordTokenizer(known=set()), 6, 5, seed=1)
