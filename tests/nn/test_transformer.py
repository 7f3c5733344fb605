"""Encoder, Decoder and EncoderDecoder (math text §1.2, §1.2.5)."""

import math

import pytest
import torch

from attnlab.analysis.jacobian import decoder_jacobian_blocks
from attnlab.errors import ConfigError
from attnlab.nn.positional import sinusoidal_encoding
from attnlab.nn.block import BlockConfig
from attnlab.nn.transformer import Encoder, EncoderDecoder
from tolerances import FLOAT64

B, N_SRC, N_TGT, L_SRC, L_TGT, D, H, D_FF = 3, 5, 7, 11, 13, 6, 3, 17


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    return EncoderDecoder(L_SRC, L_TGT, D, H, D_FF, 2, **kw).double()


def _tokens(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, L_SRC, (B, N_SRC), generator=g), torch.randint(0, L_TGT, (B, N_TGT), generator=g)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_logits_shape(norm_position):
    src, tgt = _tokens()
    logits = _model(block=BlockConfig(norm_position=norm_position))(src, tgt).logits
    assert logits.shape == (B, N_TGT, L_TGT) and logits.dtype == torch.float64
    assert torch.isfinite(logits).all()


def test_embedding_is_scaled_by_sqrt_d_plus_positions():
    torch.manual_seed(0)
    enc = Encoder(L_SRC, D, H, D_FF, 1).double()
    src, _ = _tokens()
    expected = enc.embed.W_E[src] * math.sqrt(D) + sinusoidal_encoding(N_SRC, D, dtype=torch.float64)
    assert (enc.embed(src) - expected).abs().max() < 1e-14


def test_decoder_jacobian_is_exactly_causal():
    model = _model()
    src, tgt = _tokens()
    N = decoder_jacobian_blocks(model, src[:1], tgt[:1])  # (n', n') block norms, float64
    future = torch.triu(torch.ones(N_TGT, N_TGT, dtype=torch.bool), diagonal=1)
    assert (N[future] == 0).all()  # d out_i / d x_j == 0 exactly for j > i
    assert N[~future].min() > 1e-6  # and every j <= i matters


def test_changing_a_target_token_only_changes_later_logits():
    model = _model(block=BlockConfig(norm_position="pre"), tie_embeddings=True)
    src, tgt = _tokens()
    tgt2 = tgt.clone()
    tgt2[:, 4] = (tgt[:, 4] + 1) % L_TGT
    a, b = model(src, tgt).logits, model(src, tgt2).logits
    assert torch.equal(a[:, :4], b[:, :4])
    assert (a[:, 4] - b[:, 4]).abs().max() > 1e-6


def test_padded_source_tokens_do_not_matter():
    model = _model()
    src, tgt = _tokens()
    pad = torch.zeros(B, N_SRC, dtype=torch.bool)
    pad[:, 3:] = True
    src2 = src.clone()
    src2[:, 3:] = (src[:, 3:] + 1) % L_SRC
    a = model(src, tgt, src_key_padding_mask=pad).logits
    assert (a - model(src2, tgt, src_key_padding_mask=pad).logits).abs().max() < FLOAT64
    assert (a - model(src2, tgt).logits).abs().max() > 1e-6


def test_fully_padded_rows_have_finite_gradients():
    model = _model()
    src, tgt = _tokens()
    src_pad = torch.zeros(B, N_SRC, dtype=torch.bool)
    src_pad[0] = True  # sequence 0: nothing to attend to in the source
    tgt_pad = torch.zeros(B, N_TGT, dtype=torch.bool)
    tgt_pad[1, 0] = True  # sequence 1, query 0: its only causal key is padding
    logits = model(src, tgt, src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad).logits
    logits.logsumexp(-1).sum().backward()
    assert torch.isfinite(logits).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_tied_embeddings():
    model = _model(tie_embeddings=True)
    assert model.decoder.P_out is None
    assert torch.equal(model.decoder.output_projection(), model.decoder.embed.W_E.T)
    untied = _model()
    assert untied.decoder.output_projection().shape == (D, L_TGT)
    n_tied = sum(p.numel() for p in model.parameters())
    assert sum(p.numel() for p in untied.parameters()) - n_tied == D * L_TGT


def test_unnormalized_attention_model_is_still_causal():
    model = _model(block=BlockConfig(attention="unnormalized", scale="none"))
    assert model.decoder.blocks[0].cross_attn.attention == "unnormalized"
    src, tgt = _tokens()
    N = decoder_jacobian_blocks(model, src[:1], tgt[:1])
    future = torch.triu(torch.ones_like(N, dtype=torch.bool), diagonal=1)
    assert (N[future] == 0).all() and N[~future].min() > 1e-6


def test_learned_positions_and_separate_decoder_depth():
    model = _model(positional="learned", max_len=11, n_decoder_layers=3)
    assert len(model.encoder.blocks) == 2 and len(model.decoder.blocks) == 3
    assert model.encoder.embed.positions.P.shape == (11, D)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m, s, t: m(s.float(), t), "integer tensor"),
        (lambda m, s, t: m(s + L_SRC, t), r"token ids must lie in \[0, 11\)"),
        (lambda m, s, t: m(s[:2], t), "batches differ: 2 vs 3"),
        (lambda m, s, t: m(s, t.repeat(1, 80)), "exceeds max_len=512"),
        (lambda m, s, t: EncoderDecoder(L_SRC, L_TGT, D, H, D_FF, 0), "n_layers must be positive"),
        (lambda m, s, t: EncoderDecoder(L_SRC, L_TGT, D, H, D_FF, 1, positional="rope"), "unknown positional"),
        (lambda m, s, t: EncoderDecoder(L_SRC, L_TGT, 7, 7, D_FF, 1), "even dimension"),
    ],
)
def test_bad_input_messages(call, message):
    src, tgt = _tokens()
    with pytest.raises(ConfigError, match=message):
        call(_model(), src, tgt)
