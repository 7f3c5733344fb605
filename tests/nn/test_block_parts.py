"""Switching parts of a block off (skip, MLP, LayerNorm, softmax), FFN activations, and every
intermediate of one pass: each checked against the formula written out by hand, float64,
shapes distinct primes (B=2, n=5, d_model=7, H=3, d_head=11, d_ff=13, n_src=17)."""

import math

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.nn import BlockConfig, BlockOutput, BlockParts, DecoderBlock, Encoder, FeedForward, TransformerBlock
from attnlab.nn.transformer import EncoderDecoder, TransformerOutput
from attnlab.ops.reference import reference_attention
from tolerances import assert_close

B, N, D, H, D_HEAD, D_FF, N_SRC, VOCAB = 2, 5, 7, 3, 11, 13, 17, 19


def _randomise(module, seed=0):
    """Nonzero biases and LayerNorm gains away from 1, so a part wired wrongly shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.rsplit(".", 1)[-1] in ("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2", "gamma", "beta"):
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.5 + (1.0 if "gamma" in name else 0.0))
    return module


def _block(cls=TransformerBlock, seed=0, **kw):
    torch.manual_seed(seed)
    return _randomise(cls(D, H, D_FF, BlockConfig(d_head=D_HEAD, **kw)).double(), seed)


def _x(n=N, seed=1):
    return torch.randn(B, n, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _mha(m, x_q, x_kv, normalize=True, **kw):
    """sum_h Attn(x_q W_Q,h + b_Q,h, x_kv W_K,h + b_K,h, x_kv W_V,h + b_V,h) W_O,h + b_O, head by head;
    normalize=False: the unnormalized (c Q K^T) V with c = 1/sqrt(d_head)."""
    out = m.b_O
    for h in range(m.n_heads):
        q, k, v = x_q @ m.W_Q[h] + m.b_Q[h], x_kv @ m.W_K[h] + m.b_K[h], x_kv @ m.W_V[h] + m.b_V[h]
        if normalize:
            head = reference_attention(q, k, v, **kw).output
        else:
            assert not kw
            head = (q @ k.transpose(-2, -1) / math.sqrt(D_HEAD)) @ v
        out = out + head @ m.W_O[h]
    return out


def _ln(ln, z):  # the text's eq. (2): gamma (z - mu) / (sigma + eps) + beta, eps = 1e-6
    mu = z.mean(-1, keepdim=True)
    return ln.gamma * (z - mu) / (((z - mu) ** 2).mean(-1, keepdim=True).sqrt() + 1e-6) + ln.beta


def _ffn(f, u):
    return torch.clamp(u @ f.W_1 + f.b_1, min=0) @ f.W_2 + f.b_2


# (parts, post-LN formula, pre-LN formula); b = the block, x = its input
CASES = [
    (BlockParts(),
     lambda b, x: (u := _ln(b.norm1, x + _mha(b.attn, x, x)), _ln(b.norm2, u + _ffn(b.ffn, u)))[1],
     lambda b, x: (u := x + _mha(b.attn, _ln(b.norm1, x), _ln(b.norm1, x)), u + _ffn(b.ffn, _ln(b.norm2, u)))[1]),
    (BlockParts(skip=False),
     lambda b, x: (u := _ln(b.norm1, _mha(b.attn, x, x)), _ln(b.norm2, _ffn(b.ffn, u)))[1],
     lambda b, x: _ffn(b.ffn, _ln(b.norm2, _mha(b.attn, _ln(b.norm1, x), _ln(b.norm1, x))))),
    (BlockParts(mlp=False),
     lambda b, x: _ln(b.norm1, x + _mha(b.attn, x, x)),
     lambda b, x: x + _mha(b.attn, _ln(b.norm1, x), _ln(b.norm1, x))),
    (BlockParts(layer_norm=False),  # post and pre coincide without LayerNorm
     lambda b, x: (u := x + _mha(b.attn, x, x), u + _ffn(b.ffn, u))[1],
     lambda b, x: (u := x + _mha(b.attn, x, x), u + _ffn(b.ffn, u))[1]),
    (BlockParts(softmax=False),
     lambda b, x: (u := _ln(b.norm1, x + _mha(b.attn, x, x, False)), _ln(b.norm2, u + _ffn(b.ffn, u)))[1],
     lambda b, x: (u := x + _mha(b.attn, _ln(b.norm1, x), _ln(b.norm1, x), False),
                   u + _ffn(b.ffn, _ln(b.norm2, u)))[1]),
    (BlockParts.pure_attention(),  # z = MHA(x), in either position
     lambda b, x: _mha(b.attn, x, x),
     lambda b, x: _mha(b.attn, x, x)),
    (BlockParts(skip=False, mlp=False, layer_norm=False, softmax=False),  # z = sum_h (c Q_h K_h^T) V_h W_O,h + b_O
     lambda b, x: _mha(b.attn, x, x, False),
     lambda b, x: _mha(b.attn, x, x, False)),
]


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("parts, post, pre", CASES, ids=[str(c[0]) for c in CASES])
def test_each_switch_is_its_formula(parts, post, pre, norm_position):
    block = _block(norm_position=norm_position, parts=parts)
    assert block.parts == parts
    x = _x()
    assert_close(block(x).output, (post if norm_position == "post" else pre)(block, x))


def test_parts_can_be_switched_after_construction_and_back():
    block = _block()
    x = _x()
    z = block(x).output
    block.parts = BlockParts.pure_attention()
    assert_close(block(x).output, _mha(block.attn, x, x))
    block.parts = BlockParts()
    assert torch.equal(block(x).output, z)  # switched-off parts kept their parameters


def test_pure_attention_with_padding_and_causal_mask():
    block = _block(parts=BlockParts.pure_attention())
    x, pad = _x(), torch.zeros(B, N, dtype=torch.bool)
    pad[1, 3:] = True
    assert_close(block(x, causal=True, key_padding_mask=pad).output,
                 _mha(block.attn, x, x, causal=True, key_padding_mask=pad))


@pytest.mark.parametrize("parts, formula", [
    (BlockParts(mlp=False),  # the third sublayer (FFN, its skip, its LN) is gone: z = v
     lambda b, x, Z: (u := _ln(b.norm1, x + _mha(b.self_attn, x, x, causal=True)),
                      _ln(b.norm2, u + _mha(b.cross_attn, u, Z)))[1]),
    (BlockParts(skip=False, layer_norm=False),
     lambda b, x, Z: _ffn(b.ffn, _mha(b.cross_attn, _mha(b.self_attn, x, x, causal=True), Z))),
    (BlockParts(softmax=False, mlp=False, skip=False, layer_norm=False),
     lambda b, x, Z: _mha(b.cross_attn, _unnormalized_causal(b.self_attn, x), Z, False)),
], ids=["no-mlp", "no-skip-no-ln", "unnormalized"])
def test_decoder_block_switches(parts, formula):
    block = _block(DecoderBlock, parts=parts)
    x, Z = _x(), _x(N_SRC, seed=2)
    assert_close(block(x, Z).output, formula(block, x, Z))


def _unnormalized_causal(m, x):
    """sum_h ((c Q_h K_h^T) ⊙ [j <= i]) V_h W_O,h + b_O: masked pairs weigh 0, no softmax."""
    keep = torch.tril(torch.ones(N, N, dtype=torch.float64))
    out = m.b_O
    for h in range(m.n_heads):
        q, k, v = x @ m.W_Q[h] + m.b_Q[h], x @ m.W_K[h] + m.b_K[h], x @ m.W_V[h] + m.b_V[h]
        out = out + ((q @ k.transpose(-2, -1) / math.sqrt(D_HEAD)) * keep) @ v @ m.W_O[h]
    return out


@pytest.mark.parametrize("activation, phi", [
    ("relu", lambda h: torch.clamp(h, min=0)),
    ("gelu", lambda h: 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))),
    ("gelu_tanh", lambda h: 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))),
])
def test_feedforward_activations(activation, phi):
    torch.manual_seed(0)
    f = _randomise(FeedForward(D, D_FF, activation=activation).double())
    u = _x() * 3
    assert_close(f(u), phi(u @ f.W_1 + f.b_1) @ f.W_2 + f.b_2)
    assert f"activation={activation!r}" in repr(f)


def test_the_two_gelus_differ_and_relu_stays_the_default():
    h = torch.linspace(-4, 4, 8001, dtype=torch.float64)
    gap = (torch.nn.functional.gelu(h) - torch.nn.functional.gelu(h, approximate="tanh")).abs().max().item()
    assert 1e-4 < gap < 1e-3  # the activations docstring: at most ~5e-4
    assert TransformerBlock(D, H, D_FF, BlockConfig(d_head=D_HEAD)).ffn.activation == "relu"
    assert DecoderBlock(D, H, D_FF, BlockConfig(d_head=D_HEAD, activation="gelu")).ffn.activation == "gelu"


def test_block_returns_every_heads_weights_of_the_same_pass():
    block = _block(norm_position="pre")
    x = _x()
    pad = torch.zeros(B, N, dtype=torch.bool)
    pad[0, -2:] = True
    res = block(x, key_padding_mask=pad, return_weights=True)
    assert isinstance(res, BlockOutput) and res.cross_weights is None
    assert res.weights.shape == (B, H, N, N)
    assert_close(res.output, block(x, key_padding_mask=pad).output)
    assert block(x).weights is None
    h = block.norm1(x)
    for head in range(H):
        q, k = h @ block.attn.W_Q[head] + block.attn.b_Q[head], h @ block.attn.W_K[head] + block.attn.b_K[head]
        P = reference_attention(q, k, k, key_padding_mask=pad).weights
        assert_close(res.weights[:, head], P)


def test_encoder_returns_every_layer_in_one_pass_and_takes_parts_per_layer():
    torch.manual_seed(0)
    parts = [BlockParts.pure_attention(), BlockParts(), BlockParts(softmax=False, mlp=False)]
    enc = _randomise(Encoder(VOCAB, D, H, D_FF, 3, block=BlockConfig(d_head=D_HEAD), max_len=N, positional="learned",
                             causal=True, parts=parts).double())
    assert enc.parts == parts
    tokens = torch.randint(0, VOCAB, (B, N), generator=torch.Generator().manual_seed(3))
    out = enc(tokens, output_hidden_states=True, output_attentions=True)
    assert isinstance(out, TransformerOutput) and out.cross_attentions is None
    assert len(out.hidden_states) == 4 and len(out.attentions) == 3
    X = enc.embed(tokens)
    assert torch.equal(out.hidden_states[0], X)
    for l, block in enumerate(enc.blocks):
        res = block(X, causal=True, return_weights=True)
        assert_close(out.hidden_states[l + 1], res.output)
        assert_close(out.attentions[l], res.weights)
        X = res.output
    assert torch.equal(out.output, out.hidden_states[-1])  # post-LN: no final norm
    assert_close(enc(tokens).output, out.output)
    assert enc(tokens).attentions is None and enc(tokens).hidden_states is None and enc(tokens).logits is None  # the fused kernel without weights, the explicit path with
    assert out.attentions[0].triu(1).abs().max() == 0  # causal in every layer
    assert_close(out.attentions[0].sum(-1), torch.ones(B, H, N, dtype=torch.float64))
    enc.set_parts(BlockParts())
    assert enc.parts == [BlockParts()] * 3


def test_only_what_is_asked_for_is_returned():
    torch.manual_seed(0)
    enc = Encoder(VOCAB, 6, 3, D_FF, 2, block=BlockConfig(norm_position="pre")).double()
    tokens = torch.randint(0, VOCAB, (B, N))
    out = enc(tokens, output_attentions=True)
    assert out.hidden_states is None and len(out.attentions) == 2
    out = enc(tokens, output_hidden_states=True)
    assert out.attentions is None and len(out.hidden_states) == 3
    assert_close(out.output, enc.final_norm(out.hidden_states[-1]))  # pre-LN: Z = LN_f(X_L)


def test_encoder_decoder_returns_both_stacks_with_cross_attention():
    torch.manual_seed(0)
    model = EncoderDecoder(VOCAB, 23, 6, 3, D_FF, 2).double()
    src, tgt = torch.randint(0, VOCAB, (B, N_SRC)), torch.randint(0, 23, (B, N))
    out = model(src, tgt, output_attentions=True, output_hidden_states=True)
    assert_close(out.logits, model(src, tgt).logits)
    assert [a.shape for a in out.decoder.cross_attentions] == [(B, 3, N, N_SRC)] * 2
    assert [a.shape for a in out.decoder.attentions] == [(B, 3, N, N)] * 2
    assert len(out.encoder.hidden_states) == 3 and out.decoder.logits is out.logits
    assert_close(out.decoder.logits, out.decoder.output @ model.decoder.output_projection())


@pytest.mark.parametrize("call, message", [
    (lambda: FeedForward(D, D_FF, activation="swish"), "activation must be one of relu, gelu, gelu_tanh"),
    (lambda: BlockParts(skip=1), "skip must be true or false"),
    (lambda: BlockConfig(d_head=D_HEAD, parts=BlockParts(layer_norm="no")), "layer_norm must be true or false"),
    (lambda: BlockConfig(parts={"skip": False}), "parts must be a BlockParts"),
    (lambda: BlockConfig(ffn="moe"), "unknown ffn 'moe'"),
    (lambda: BlockConfig(d_head=0), "d_head must be a positive integer or None"),
    (lambda: BlockConfig(dropout=1.0), r"dropout must be a number in \[0, 1\)"),
    (lambda: TransformerBlock(D, H, D_FF, {"norm": "rms"}), "config must be a BlockConfig"),
    (lambda: Encoder(VOCAB, 6, 3, D_FF, 2, block={"norm": "rms"}), "block must be a BlockConfig"),
    (lambda: setattr(TransformerBlock(D, H, D_FF, BlockConfig(d_head=D_HEAD)), "parts", {"skip": False}),
     "parts must be a BlockParts"),
    (lambda: Encoder(VOCAB, 6, 3, D_FF, 2, parts=[BlockParts()]), r"a sequence of 2 \(one per layer\)"),
    (lambda: Encoder(VOCAB, 6, 3, D_FF, 2)(torch.zeros(1, 3, dtype=torch.long), output_attentions=1),
     "output_attentions must be true or false"),
])
def test_bad_input_messages(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
