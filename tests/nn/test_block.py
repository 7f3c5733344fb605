"""FeedForward, TransformerBlock (post-/pre-LN) and DecoderBlock (math text §1.2.2-§1.2.5)."""


import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.nn.block import BlockConfig, DecoderBlock, FeedForward, TransformerBlock
from attnlab.ops.reference import reference_attention
from tolerances import FLOAT64, FLOAT64_LONG

B, N, N_SRC, D, H, D_FF = 3, 5, 7, 6, 3, 11


def _randomise(module, seed=0):
    """Nonzero biases and non-trivial LayerNorm gains so wiring mistakes show."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.rsplit(".", 1)[-1] in ("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2", "gamma", "beta"):
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.5 + (1.0 if "gamma" in name else 0.0))
    return module


def _x(n=N, seed=1):
    return torch.randn(B, n, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _mha_ref(m, x_q, x_kv, **kw):
    """Multi-head attention rebuilt from the float64 oracle, head by head."""
    out = m.b_O
    for h in range(m.n_heads):
        q, k, v = x_q @ m.W_Q[h] + m.b_Q[h], x_kv @ m.W_K[h] + m.b_K[h], x_kv @ m.W_V[h] + m.b_V[h]
        out = out + reference_attention(q, k, v, **kw).output @ m.W_O[h]
    return out


def _ln(ln, z):
    mu = z.mean(-1, keepdim=True)
    sigma = ((z - mu) ** 2).mean(-1, keepdim=True).sqrt()
    return ln.gamma * (z - mu) / (sigma + 1e-6) + ln.beta


def _ffn(f, u):
    return torch.clamp(u @ f.W_1 + f.b_1, min=0) @ f.W_2 + f.b_2


def test_feedforward_shapes_and_formula():
    f = _randomise(FeedForward(D, D_FF).double())
    assert {n: tuple(p.shape) for n, p in f.named_parameters()} == {
        "W_1": (D, D_FF), "W_2": (D_FF, D), "b_1": (D_FF,), "b_2": (D,)  # b_1 in R^m, b_2 in R^d
    }
    u = _x()
    assert (f(u) - _ffn(f, u)).abs().max() < FLOAT64
    assert f(u).shape == (B, N, D)
    assert len(list(FeedForward(D, D_FF, bias=False).parameters())) == 2


def test_post_ln_block_is_the_text():
    block = _randomise(TransformerBlock(D, H, D_FF).double())
    x = _x()
    u = _ln(block.norm1, x + _mha_ref(block.attn, x, x))  # u = LN(x + MHA(x))
    z = _ln(block.norm2, u + _ffn(block.ffn, u))  # z = LN(u + FFN(u))
    assert (block(x).output - z).abs().max() < FLOAT64_LONG


def test_pre_ln_block():
    block = _randomise(TransformerBlock(D, H, D_FF, BlockConfig(norm_position="pre")).double())
    x = _x()
    u = x + _mha_ref(block.attn, _ln(block.norm1, x), _ln(block.norm1, x))  # u = x + MHA(LN(x))
    z = u + _ffn(block.ffn, _ln(block.norm2, u))  # z = u + FFN(LN(u))
    assert (block(x).output - z).abs().max() < FLOAT64_LONG


def test_post_ln_rows_are_normalised_pre_ln_rows_are_not():
    torch.manual_seed(0)
    post = TransformerBlock(D, H, D_FF).double()
    pre = TransformerBlock(D, H, D_FF, BlockConfig(norm_position="pre")).double()
    pre.load_state_dict(post.state_dict())
    x = _x() * 4
    z = post(x).output  # gamma = 1, beta = 0: every row has mean 0 and std sigma/(sigma + eps)
    assert z.mean(-1).abs().max() < 1e-14
    assert (z.pow(2).mean(-1) - 1).abs().max() < 1e-5
    assert (pre(x).output.pow(2).mean(-1) - 1).abs().max() > 0.1


def test_standard_norm_and_causal_mask():
    block = _randomise(TransformerBlock(D, H, D_FF, BlockConfig(norm="standard")).double())
    x = _x()
    ln = lambda m, z: torch.nn.functional.layer_norm(z, (D,), m.gamma, m.beta, 1e-5)  # noqa: E731
    u = ln(block.norm1, x + _mha_ref(block.attn, x, x, causal=True))
    z = ln(block.norm2, u + _ffn(block.ffn, u))
    assert (block(x, causal=True).output - z).abs().max() < FLOAT64_LONG


def test_dropout_off_by_default_is_deterministic_in_train_mode():
    block = TransformerBlock(D, H, D_FF).double().train()
    x = _x()
    assert torch.equal(block(x).output, block(x).output)
    noisy = TransformerBlock(D, H, D_FF, BlockConfig(dropout=0.5)).double().train()
    assert not torch.equal(noisy(x).output, noisy(x).output)


def test_decoder_block_post_ln_is_the_text():
    block = _randomise(DecoderBlock(D, H, D_FF).double())
    x, Z = _x(), _x(N_SRC, seed=2)
    u = _ln(block.norm1, x + _mha_ref(block.self_attn, x, x, causal=True))
    v = _ln(block.norm2, u + _mha_ref(block.cross_attn, u, Z))  # own W_K, W_V on Z
    z = _ln(block.norm3, v + _ffn(block.ffn, v))
    assert (block(x, Z).output - z).abs().max() < FLOAT64_LONG


def test_decoder_block_pre_ln():
    block = _randomise(DecoderBlock(D, H, D_FF, BlockConfig(norm_position="pre")).double())
    x, Z = _x(), _x(N_SRC, seed=2)
    u = x + _mha_ref(block.self_attn, *(2 * (_ln(block.norm1, x),)), causal=True)
    v = u + _mha_ref(block.cross_attn, _ln(block.norm2, u), Z)
    z = v + _ffn(block.ffn, _ln(block.norm3, v))
    assert (block(x, Z).output - z).abs().max() < FLOAT64_LONG


def test_decoder_block_is_causal_and_reads_Z():
    block = _randomise(DecoderBlock(D, H, D_FF).double())
    x, Z = _x(), _x(N_SRC, seed=2)
    out = block(x, Z).output
    x2 = x.clone()
    x2[:, 3] += 1.0  # change target position 3
    out2 = block(x2, Z).output
    assert torch.equal(out[:, :3], out2[:, :3])  # positions < 3 untouched, exactly
    assert (out[:, 3:] - out2[:, 3:]).abs().amin(-1).min() > 1e-6
    assert (block(x, Z + 1.0).output - out).abs().max() > 1e-3


def test_memory_padding_hides_padded_source_positions():
    block = _randomise(DecoderBlock(D, H, D_FF).double())
    x, Z = _x(), _x(N_SRC, seed=2)
    pad = torch.zeros(B, N_SRC, dtype=torch.bool)
    pad[:, 4:] = True
    Z2 = Z.clone()
    Z2[:, 4:] = 100.0
    out = block(x, Z, memory_key_padding_mask=pad).output
    assert (out - block(x, Z2, memory_key_padding_mask=pad).output).abs().max() < FLOAT64


def test_fully_padded_rows_have_finite_gradients():
    block = TransformerBlock(D, H, D_FF).double()
    x = _x().requires_grad_(True)
    pad = torch.zeros(B, N, dtype=torch.bool)
    pad[2] = True
    out = block(x, key_padding_mask=pad).output
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in block.parameters())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: BlockConfig(norm_position="sandwich"), "unknown norm_position 'sandwich'"),
        (lambda: BlockConfig(norm_position="middle"), "unknown norm_position 'middle'"),
        (lambda: BlockConfig(norm="batch"), "unknown LayerNorm variant 'batch'"),
        (lambda: TransformerBlock(D, 4, D_FF), "not divisible by n_heads=4"),
        (lambda: FeedForward(D, 0), "d_model and d_ff must be positive"),
    ],
)
def test_bad_input_messages(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
