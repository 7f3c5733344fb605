"""Closed-form parameter counts (math text §1.2.2, §2)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.analysis.parameters import (
    attention_parameters,
    bert_parameters,
    block_parameters,
    decoder_block_parameters,
    decoder_only_parameters,
    encoder_decoder_parameters,
    ffn_parameters,
    gpt_parameters,
)
from attnlab.errors import ConfigError
from attnlab.nn.attention import MultiHeadAttention
from attnlab.nn.block import BlockConfig, DecoderBlock, TransformerBlock
from attnlab.nn.transformer import EncoderDecoder


def _numel(m):
    return sum(p.numel() for p in m.parameters())


def test_block_formula_by_hand():
    d, H, k, m = 7, 3, 5, 11
    # 4 H d k + 3 H k + d (attention) + 2 d m + m + d (FFN) + 4 d (two LayerNorms)
    assert block_parameters(d, H, k, m) == 4 * 3 * 7 * 5 + 3 * 3 * 5 + 7 + 2 * 7 * 11 + 11 + 7 + 4 * 7
    assert block_parameters(d, H, k, m, bias=False, norm=False) == 4 * 3 * 7 * 5 + 2 * 7 * 11
    d = 512  # H k = d, m = 4d: 12 d^2 + 13 d
    assert block_parameters(d, 8, 64, 4 * d) == 12 * d * d + 13 * d


@settings(max_examples=15, deadline=None)
@given(
    d=st.integers(1, 13), H=st.integers(1, 5), k=st.integers(1, 7), m=st.integers(1, 13), bias=st.booleans()
)
def test_blocks_match_modules(d, H, k, m, bias):
    assert block_parameters(d, H, k, m, bias) == _numel(TransformerBlock(d, H, m, BlockConfig(d_head=k, bias=bias)))
    assert decoder_block_parameters(d, H, k, m, bias) == _numel(DecoderBlock(d, H, m, BlockConfig(d_head=k, bias=bias)))


def test_attention_with_d_v_and_multi_query():
    m = MultiHeadAttention(11, 3, d_head=5, d_v=7)
    assert attention_parameters(11, 3, 5, 7) == _numel(m)
    # multi-query: one key/value head: d(H k + 2k) + H k d weights
    assert attention_parameters(11, 3, 5, n_kv_heads=1, bias=False) == 11 * (15 + 10) + 15 * 11


def test_gated_ffn():
    assert ffn_parameters(5, 7, gated=True, bias=False) == 3 * 5 * 7
    assert ffn_parameters(5, 7, gated=True) == 3 * 5 * 7 + 2 * 7 + 5


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("positional, norm_position", [("sinusoidal", "post"), ("learned", "pre")])
def test_encoder_decoder_matches_module(tie, positional, norm_position):
    kw = dict(tie_embeddings=tie, positional=positional, max_len=13)
    model = EncoderDecoder(11, 13, 6, 3, 7, 2, n_decoder_layers=3, block=BlockConfig(norm_position=norm_position), **kw)
    assert encoder_decoder_parameters(11, 13, 6, 3, 7, 2, n_decoder_layers=3, norm_position=norm_position,
                                      **kw) == _numel(model)


def test_original_transformer_base_by_hand():
    # d=512, H=8, m=2048, L=6, vocabularies of 37000: encoder block 12d^2 + 13d; decoder block
    # 2 attentions (8d^2 + 8d) + FFN (8d^2 + 5d) + 3 LayerNorms (6d) = 16d^2 + 19d;
    # embeddings 2 x 37000 d, plus the d x 37000 output projection unless tied
    d, blocks = 512, 6 * (12 * 512**2 + 13 * 512) + 6 * (16 * 512**2 + 19 * 512)
    assert encoder_decoder_parameters(37000, 37000, d, 8, 2048, 6) == blocks + 3 * 37000 * d
    assert encoder_decoder_parameters(37000, 37000, d, 8, 2048, 6, tie_embeddings=True) == blocks + 2 * 37000 * d


def test_gpt2_small_and_bert_base_known_counts():
    # GPT-2 small (HF "gpt2"): 124,439,808; BERT-base uncased with pooler: 109,482,240
    assert gpt_parameters(12, 768, 12, 3072, 50257, 1024) == 124_439_808
    assert bert_parameters(12, 768, 12, 3072, 30522, 512) == 109_482_240


def test_gpt3_by_hand():
    d = 12288
    expected = 96 * (12 * d * d + 13 * d) + (50257 + 2048) * d + 2 * d
    assert gpt_parameters(96, d, 96, 4 * d, 50257, 2048) == expected


def test_palm_540b_matches_its_report():
    # PaLM reports 540.35B; no biases, scale-only LayerNorm, one per parallel block
    n = decoder_only_parameters(
        118, 18432, 48, 256, 73728, 256000, bias=False, gated_ffn=True, n_kv_heads=1,
        norms_per_layer=1, norm_bias=False,
    )
    assert abs(n - 540.35e9) / 540.35e9 < 1e-4


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: block_parameters(0, 2, 3, 5), "d_model must be a positive integer"),
        (lambda: gpt_parameters(2, 10, 3, 7, 11, 13), "not divisible by n_heads=3"),
        (lambda: encoder_decoder_parameters(11, 13, 6, 3, 7, 2, norm_position="mid"), "norm_position"),
        (lambda: encoder_decoder_parameters(11, 13, 6, 3, 7, 2, positional="rope"), "positional"),
        (lambda: bert_parameters(2, 6, 3, 7, 11, 0), "n_positions must be a positive integer"),
    ],
)
def test_bad_input_messages(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
