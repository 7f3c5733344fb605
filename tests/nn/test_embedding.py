"""The input embedding X = N(W_E[x] s + W_T[t] + P[p]) (nn/embedding.py), by hand, float64,
shapes distinct primes (B=2, n=5, d=7, vocab 11, max_len 13, 3 token types)."""

import math

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.nn import Embedding, Encoder
from attnlab.nn.positional import sinusoidal_encoding

B, N, D, VOCAB, MAX_LEN, TYPES = 2, 5, 7, 11, 13, 3


def _tokens(seed=0, high=VOCAB):
    return torch.randint(0, high, (B, N), generator=torch.Generator().manual_seed(seed))


def test_default_is_the_texts_scaled_sum():
    torch.manual_seed(0)
    e = Embedding(VOCAB, 8, max_len=MAX_LEN).double()  # sinusoidal needs an even d
    x = _tokens()
    assert (e(x) - (e.W_E[x] * math.sqrt(8) + sinusoidal_encoding(N, 8, dtype=torch.float64))).abs().max() < 1e-14


def test_bert_style_embedding_by_hand():
    torch.manual_seed(0)
    e = Embedding(VOCAB, D, max_len=MAX_LEN, positional="learned", scale=False, type_vocab_size=TYPES,
                  norm="standard", eps=1e-12).double()
    with torch.no_grad():
        e.norm.gamma.copy_(torch.linspace(0.5, 1.5, D))
        e.norm.beta.copy_(torch.linspace(-0.3, 0.3, D))
    x, t = _tokens(), _tokens(1, TYPES)
    p = torch.tensor([[0, 1, 2, 3, 4], [3, 4, 5, 6, 7]])
    z = e.W_E[x] + e.W_T[t] + e.positions.P[p]
    mu, var = z.mean(-1, keepdim=True), z.var(-1, unbiased=False, keepdim=True)
    expected = e.norm.gamma * (z - mu) / torch.sqrt(var + 1e-12) + e.norm.beta
    assert (e(x, t, p) - expected).abs().max() < 1e-13
    zero_types = e.W_E[x] + e.W_T[0] + e.positions.P[:N]  # types default to 0, positions to 0..n-1
    mu, var = zero_types.mean(-1, keepdim=True), zero_types.var(-1, unbiased=False, keepdim=True)
    expected = e.norm.gamma * (zero_types - mu) / torch.sqrt(var + 1e-12) + e.norm.beta
    assert (e(x) - expected).abs().max() < 1e-13


def test_position_ids_index_the_sinusoidal_table_too():
    torch.manual_seed(0)
    e = Embedding(VOCAB, 8, max_len=MAX_LEN, scale=False).double()
    x, p = _tokens(), torch.tensor([[0, 0, 1, 2, 3], [12, 11, 10, 9, 8]])
    P = sinusoidal_encoding(MAX_LEN, 8, dtype=torch.float64)
    assert (e(x, position_ids=p) - (e.W_E[x] + P[p])).abs().max() < 1e-14


@pytest.mark.parametrize("call, message", [
    (lambda e: e(_tokens(), torch.zeros(B, N, dtype=torch.long)), r"no token types \(type_vocab_size=0\)"),
    (lambda e: e(_tokens(), position_ids=torch.full((B, N), MAX_LEN)), r"position_ids must lie in \[0, 13\)"),
    (lambda e: e(_tokens(), position_ids=torch.zeros(B, N + 1, dtype=torch.long)), "matching the input's length"),
    (lambda e: Embedding(VOCAB, D, positional="learned", type_vocab_size=-1), "type_vocab_size must be an integer >= 0"),
    (lambda e: Embedding(VOCAB, D, positional="learned", norm="batch"), "unknown LayerNorm variant 'batch'"),
    (lambda e: Embedding(VOCAB, D, positional="learned", type_vocab_size=2)(_tokens(), torch.full((B, N), 2)),
     r"token_type_ids must lie in \[0, 2\)"),
])
def test_bad_input_messages(call, message):
    e = Embedding(VOCAB, D, max_len=MAX_LEN, positional="learned")
    with pytest.raises(ConfigError, match=message):
        call(e)


def test_a_transformers_attention_mask_is_refused_by_the_stack():
    torch.manual_seed(0)
    enc = Encoder(VOCAB, 6, 3, 7, 1).double()
    attention_mask = torch.ones(B, N, dtype=torch.long)  # transformers: 1 = real token
    with pytest.raises(ConfigError, match="key_padding_mask_from_attention_mask"):
        enc(_tokens(), attention_mask)
    with pytest.raises(ConfigError, match="every key of every sequence"):
        enc(_tokens(), attention_mask.bool())
