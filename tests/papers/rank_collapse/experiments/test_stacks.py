"""The networks and surgery of the rank-collapse experiments (papers/rank_collapse/stacks.py)."""

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.nn.block import BlockParts
from attnlab.papers.rank_collapse.stacks import (BERT_INIT_STD, VARIANTS, attnlab_stack, bert_random, build_model,
                                                 long_texts, minilm, run_model, text_batch, with_parts)
from tolerances import FLOAT64


def test_with_parts_switches_and_restores():
    model = minilm().model
    before = model.parts
    with with_parts(model, VARIANTS["SAN"]):
        assert all(p == BlockParts(skip=False, mlp=False, layer_norm=False) for p in model.parts)
    assert model.parts == before
    with pytest.raises(RuntimeError), with_parts(model, VARIANTS["SAN+skip"]):
        raise RuntimeError("interrupted")
    assert model.parts == before  # restored even when the body raises


def test_random_inits_have_the_stated_scales():
    m = bert_random(3)
    W = m.blocks[0].attn.W_Q.detach()
    assert abs(float(W.std()) - BERT_INIT_STD) < 0.05 * BERT_INIT_STD
    assert float(m.blocks[2].attn.b_V.detach().abs().max()) == 0.0 and torch.all(m.blocks[1].norm1.gamma == 1)
    s = attnlab_stack(3, n_layers=12)
    assert len(s.blocks) == 12
    assert abs(float(s.blocks[5].attn.W_K.detach().std()) * 384**0.5 - 1) < 0.05  # N(0, 1/d)
    assert abs(float(s.blocks[5].ffn.W_2.detach().std()) * 1536**0.5 - 1) < 0.05  # N(0, 1/d_ff)
    assert torch.equal(bert_random(3).blocks[0].attn.W_Q.detach(), W)  # the seed fixes every weight


def test_run_model_returns_every_state_and_matches_the_unablated_model():
    batch = text_batch(long_texts(2, 10, 0), 10)
    model = build_model("pretrained", 0)
    out = run_model("pretrained", model, batch, BlockParts())
    assert len(out.hidden_states) == 7 and out.hidden_states[0].shape == (2, 10, 384)
    assert torch.equal(out.hidden_states[0], batch.X0)
    ref = minilm().forward(batch.input_ids, token_type_ids=batch.token_type_ids, position_ids=batch.position_ids)
    assert (out.hidden_states[-1] - ref.hidden_states[-1]).abs().max() <= FLOAT64


def test_short_texts_are_refused():
    with pytest.raises(ConfigError, match="fewer than n=200"):
        text_batch(["A short sentence."], 200)
    with pytest.raises(ConfigError, match="help topics have 100000 tokens"):
        long_texts(1, 100000, 0)
    with pytest.raises(ConfigError, match="unknown model"):
        build_model("gpt-5", 0)


def test_dong_surgery_keeps_layer_norm_and_the_ffn_residual():
    """Dong et al.'s SAN is attnlab's SAN+LN; their SAN+MLP is u = N_1(MHA(x)), z = N_2(u + FFN(u)),
    which no BlockParts gives (attnlab's SAN+MLP drops the FFN's residual and LayerNorm)."""
    from attnlab.papers.rank_collapse.stacks import run_dong

    batch = text_batch(long_texts(1, 8, 0), 8)
    model = build_model("pretrained", 0)
    dong = run_dong("pretrained", model, batch, "SAN").hidden_states
    ln = run_model("pretrained", model, batch, VARIANTS["SAN+LN"]).hidden_states
    assert all(torch.equal(a, b) for a, b in zip(dong, ln))
    x = batch.X0
    b0 = model.blocks[0]
    with torch.no_grad():
        u = b0.norm1(b0.attn(x).output)
        by_hand = b0.norm2(u + b0.ffn(u))
    assert torch.allclose(run_dong("pretrained", model, batch, "SAN+MLP").hidden_states[1], by_hand, atol=FLOAT64)
    full = run_model("pretrained", model, batch, VARIANTS["transformer"]).hidden_states
    assert all(torch.equal(a, b) for a, b in zip(run_dong("pretrained", model, batch, "transformer").hidden_states,
                                                 full))
    with pytest.raises(ConfigError, match="unknown variant"):
        run_dong("pretrained", model, batch, "SAN+LN")
