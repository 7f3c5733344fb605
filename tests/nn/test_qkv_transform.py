"""The q/k/v extension point of the stacks: QKVTransform, RoPE its first implementation."""

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.nn import BlockConfig, Encoder, QKVTransform, RoPE
from attnlab.ops.rotary import rotary

VOCAB, D, H, D_FF = 17, 8, 2, 12


class Scaled:
    """A QKVTransform that multiplies the values by s (and leaves q, k): the residual stream of
    every attention sublayer scales by s when W_O, b_O, b_V act linearly."""

    def __init__(self, s: float):
        self.s = s

    def at(self, position_ids, d_head, dtype):
        return lambda q, k, v: (q, k, self.s * v)


def _encoder(qkv_transform=None):
    torch.manual_seed(0)
    return Encoder(VOCAB, D, H, D_FF, 2, positional="none", causal=True, embedding_scale=False,
                   block=BlockConfig(norm="rms", norm_position="pre", bias=False),
                   qkv_transform=qkv_transform).double()


def test_rope_is_a_qkv_transform_rotating_q_and_k_and_leaving_v():
    rope = RoPE(1e4)
    assert isinstance(rope, QKVTransform) and isinstance(Scaled(2.0), QKVTransform)
    pos = torch.arange(5)[None]
    q, k, v = (torch.randn(1, H, 5, 4, dtype=torch.float64) for _ in range(3))
    q2, k2, v2 = rope.at(pos, 4, torch.float64)(q, k, v)
    R = rotary(pos, 4, 1e4)
    assert torch.equal(q2, R.rotate(q)) and torch.equal(k2, R.rotate(k)) and v2 is v
    # the half-split pairs (x_j, x_{j+k/2}) rotate by p theta_j: the logits depend on p_j - p_i only
    shifted = rope.at(pos + 3, 4, torch.float64)(q, k, v)
    assert torch.allclose(q2 @ k2.transpose(-1, -2), shifted[0] @ shifted[1].transpose(-1, -2), atol=1e-12)


def test_encoder_applies_the_transform_in_every_block():
    tokens = torch.randint(0, VOCAB, (2, 6), generator=torch.Generator().manual_seed(1))
    plain, scaled = _encoder(), _encoder(Scaled(1.0))
    assert torch.equal(plain(tokens).output, scaled(tokens).output)
    scaled.qkv_transform = Scaled(0.0)  # no value reaches the residual stream: attention writes b_O = 0
    X = scaled.embed(tokens)
    Z = scaled(tokens, output_hidden_states=True)
    for block in scaled.blocks:
        X = X + block.ffn(block.norm2(X))
    assert torch.allclose(Z.hidden_states[-1], X, atol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: RoPE(1.0), "the RoPE base must be a finite number > 1"),
    (lambda: RoPE(1e4, scaling=0), "the RoPE position scaling must be a positive number"),
    (lambda: Encoder(VOCAB, D, H, D_FF, 1, positional="none", qkv_transform=1e4), "qkv_transform must be a QKVTransform"),
    (lambda: Encoder(VOCAB, 6, 2, D_FF, 1, positional="none", qkv_transform=RoPE()), "RoPE needs an even head size"),
])
def test_bad_input_messages(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
