"""Hook points on the encoder-decoder's Decoder (tiny random decoders, float64): TransformerLens' names
with the cross-attention's, shapes, identities between hook points, the unhooked pass unchanged to the
last bit, and hooks that return their input changing no bit."""

from __future__ import annotations

import pytest
import torch

from attnlab.nn import BlockConfig, Decoder, EncoderDecoder
from attnlab.nn.hooked import tl_name
from attnlab.nn.hooks import HookPoint
from attnlab.ops import fused
from tolerances import FLOAT64

# distinct sizes: d = 24 = 6 heads x 4; the pre-LN decoder shares H_kv = 2 key/value heads (groups of 3);
# n' = 7 target positions, n = 11 encoder positions
D, H, D_HEAD, H_KV, D_FF, L, V, B, N_TGT, N_SRC = 24, 6, 4, 2, 14, 3, 23, 5, 7, 11
ATTN = ("hook_q", "hook_k", "hook_v", "hook_rot_q", "hook_rot_k", "hook_attn_scores", "hook_pattern", "hook_z")
PER_BLOCK = ("hook_resid_pre", *(f"attn.{p}" for p in ATTN), "hook_attn_out", "hook_resid_mid",
             *(f"cross_attn.{p}" for p in ATTN), "hook_cross_attn_out", "hook_resid_mid_cross",
             "mlp.hook_post", "hook_mlp_out", "hook_resid_post")


def _with_biases(m: Decoder, seed: int) -> Decoder:
    """Nonzero biases and gains, so a wiring error shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith(("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2", "beta", "gamma")):
                p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3)
    return m


def _pre_ln() -> Decoder:
    torch.manual_seed(0)
    m = Decoder(V, D, H, D_FF, L, positional="learned", tie_embeddings=True,
                block=BlockConfig(norm="standard", norm_position="pre", activation="gelu", n_kv_heads=H_KV))
    return _with_biases(m.double().eval(), 1)


def _post_ln() -> Decoder:  # the text's decoder: post-LN, sinusoidal positions, its own P_out
    torch.manual_seed(2)
    return _with_biases(Decoder(V, D, H, D_FF, L).double().eval(), 3)


@pytest.fixture(scope="module", params=["pre", "post"])
def decoder(request):
    return {"pre": _pre_ln, "post": _post_ln}[request.param]()


def _inputs(seed: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, V, (B, N_TGT), generator=g), torch.randn(B, N_SRC, D, generator=g, dtype=torch.float64)


def _h_kv(decoder: Decoder) -> int:
    return decoder.blocks[0].self_attn.n_kv_heads


def test_every_name_exists_in_pass_order(decoder):
    names = list(decoder.hook_points())
    assert names == ["hook_embed"] + [f"blocks.{l}.{p}" for l in range(L) for p in PER_BLOCK] + \
        ["ln_final.hook_normalized"]
    assert tl_name("blocks.2.self_attn.hook_pattern") == "blocks.2.attn.hook_pattern"
    assert tl_name("blocks.2.cross_attn.hook_pattern") == "blocks.2.cross_attn.hook_pattern"
    assert decoder.hook_points()["blocks.1.attn.hook_z"] is decoder.blocks[1].self_attn.hook_z


def test_cache_shapes(decoder):
    tokens, Z = _inputs()
    logits, cache = decoder.run_with_cache(tokens, Z=Z)
    g = _h_kv(decoder)
    shapes = {"hook_embed": (B, N_TGT, D), "blocks.1.attn.hook_q": (B, N_TGT, H, D_HEAD),
              "blocks.1.attn.hook_k": (B, N_TGT, g, D_HEAD), "blocks.1.attn.hook_pattern": (B, H, N_TGT, N_TGT),
              "blocks.1.cross_attn.hook_q": (B, N_TGT, H, D_HEAD), "blocks.1.cross_attn.hook_k": (B, N_SRC, g, D_HEAD),
              "blocks.1.cross_attn.hook_v": (B, N_SRC, g, D_HEAD),
              "blocks.1.cross_attn.hook_attn_scores": (B, H, N_TGT, N_SRC),
              "blocks.1.cross_attn.hook_z": (B, N_TGT, H, D_HEAD), "blocks.1.hook_cross_attn_out": (B, N_TGT, D),
              "blocks.1.hook_resid_mid_cross": (B, N_TGT, D), "blocks.1.mlp.hook_post": (B, N_TGT, D_FF),
              "ln_final.hook_normalized": (B, N_TGT, D)}
    assert {k: tuple(cache[k].shape) for k in shapes} == shapes
    assert len(cache) == len(decoder.hook_points()) and tuple(logits.shape) == (B, N_TGT, V)


def test_cache_identities(decoder):
    """pattern = the forward's weights (self and cross); z_h W_O,h summed + b_O = the sublayer's output;
    resid_post(l) = resid_pre(l + 1); resid_mid = resid_pre + attn_out (pre-LN; LN_1 of it post-LN), and
    likewise resid_mid_cross and resid_post; keys and values of the cross-attention are Z's."""
    tokens, Z = _inputs()
    _, cache = decoder.run_with_cache(tokens, Z=Z)
    ref = decoder(tokens, Z, output_attentions=True)
    G = H // _h_kv(decoder)
    for l, block in enumerate(decoder.blocks):
        c = lambda p: cache[f"blocks.{l}.{p}"]  # noqa: E731
        for prefix, module, weights in (("attn", block.self_attn, ref.attentions[l]),
                                        ("cross_attn", block.cross_attn, ref.cross_attentions[l])):
            P = c(f"{prefix}.hook_pattern")
            assert (P - weights).abs().max().item() <= FLOAT64
            assert (torch.softmax(c(f"{prefix}.hook_attn_scores"), -1) - P).abs().max().item() <= FLOAT64
            v = c(f"{prefix}.hook_v").repeat_interleave(G, 2)
            assert (torch.einsum("bhqk,bkhd->bqhd", P, v) - c(f"{prefix}.hook_z")).abs().max().item() <= FLOAT64
            out = torch.einsum("bqhd,hdm->bqm", c(f"{prefix}.hook_z"), module.W_O) + module.b_O
            written = "hook_attn_out" if prefix == "attn" else "hook_cross_attn_out"
            assert (out - c(written)).abs().max().item() <= FLOAT64
        causal_masked = torch.isinf(c("attn.hook_attn_scores"))
        assert torch.equal(causal_masked, torch.ones(N_TGT, N_TGT, dtype=torch.bool).triu(1).expand_as(causal_masked))
        k = torch.einsum("bnd,gde->bnge", Z, block.cross_attn.W_K) + block.cross_attn.b_K
        assert (k - c("cross_attn.hook_k")).abs().max().item() <= FLOAT64
        if l + 1 < L:
            assert torch.equal(c("hook_resid_post"), cache[f"blocks.{l + 1}.hook_resid_pre"])
        mid = c("hook_resid_pre") + c("hook_attn_out")
        mid_cross = c("hook_resid_mid") + c("hook_cross_attn_out")
        post = c("hook_resid_mid_cross") + c("hook_mlp_out")
        if block.norm_position == "post":
            mid, mid_cross, post = block.norm1(mid), block.norm2(mid_cross), block.norm3(post)
        assert (mid - c("hook_resid_mid")).abs().max().item() <= FLOAT64
        assert (mid_cross - c("hook_resid_mid_cross")).abs().max().item() <= FLOAT64
        assert (post - c("hook_resid_post")).abs().max().item() <= FLOAT64
    assert torch.equal(cache["hook_embed"], decoder.embed(tokens))
    assert torch.equal(cache["ln_final.hook_normalized"], ref.output)


def _unhooked_reference(decoder: Decoder, tokens: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    """The decoder's pass as written before it had hook points: the same modules in the same order."""
    X = decoder.embed(tokens)
    for b in decoder.blocks:
        def N(norm, h):
            return norm(h) if b.parts.layer_norm else h

        def sa(h):
            return b.dropout(b.self_attn(h, causal=True).output)

        def ca(h):
            return b.dropout(b.cross_attn(h, Z).output)

        if b.norm_position == "post":
            u = N(b.norm1, X + sa(X))
            v = N(b.norm2, u + ca(u))
            X = N(b.norm3, v + b.dropout(b.ffn(v)))
        else:
            u = X + sa(N(b.norm1, X))
            v = u + ca(N(b.norm2, u))
            X = v + b.dropout(b.ffn(N(b.norm3, v)))
    Y = X if decoder.final_norm is None else decoder.final_norm(X)
    return Y @ decoder.output_projection()


def test_with_no_hook_the_pass_is_the_one_without_hook_points(decoder, monkeypatch):
    """No point's forward is entered, and the logits equal the pre-hook composition bit for bit."""
    tokens, Z = _inputs()

    def entered(self, x):
        raise AssertionError(f"{self.name} ran with no hook attached")

    monkeypatch.setattr(HookPoint, "forward", entered)
    assert torch.equal(decoder(tokens, Z).logits, _unhooked_reference(decoder, tokens, Z))


def _identity(x, name):
    return x


def test_hooks_that_return_their_input_change_no_bit(decoder, monkeypatch):
    """Every point but scores and pattern: the same fused pass (2 attentions per block); with those too:
    the explicit pass of output_attentions; both bit for bit."""
    tokens, Z = _inputs()
    calls = []
    real = fused.F.scaled_dot_product_attention
    monkeypatch.setattr(fused.F, "scaled_dot_product_attention", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    plain = decoder(tokens, Z).logits
    keep = [(n, _identity) for n in decoder.hook_points() if not n.endswith(("attn_scores", "pattern"))]
    assert torch.equal(decoder.run_with_hooks(tokens, keep, Z=Z), plain) and len(calls) == 2 * 2 * L
    every = decoder.run_with_hooks(tokens, [(lambda n: True, _identity)], Z=Z)
    assert torch.equal(every, decoder(tokens, Z, output_attentions=True).logits)
    assert len(calls) == 2 * 2 * L  # scores/pattern hooks left the fused kernel
    assert all(not p.fns for p in decoder.hook_points().values())


def test_a_zeroed_cross_attention_head_equals_a_zeroed_W_O_row(decoder):
    tokens, Z = _inputs()

    def zero_head(z, name):
        z = z.clone()
        z[:, :, 4] = 0
        return z

    got = decoder.run_with_hooks(tokens, [("blocks.1.cross_attn.hook_z", zero_head)], Z=Z)
    W_O = decoder.blocks[1].cross_attn.W_O
    saved = W_O.detach().clone()
    with torch.no_grad():
        W_O[4] = 0
        want = decoder(tokens, Z).logits
        W_O.copy_(saved)
    assert (got - want).abs().max().item() <= FLOAT64
    assert (got - decoder(tokens, Z).logits).abs().max().item() > 1e-3  # the head mattered


def test_an_error_inside_the_context_leaves_the_decoder_as_it_was(decoder):
    tokens, Z = _inputs()
    before = decoder(tokens, Z).logits
    with pytest.raises(RuntimeError, match="stop"):
        with decoder.hooks([("blocks.0.hook_resid_mid_cross", lambda x, n: torch.zeros_like(x))]):
            assert not torch.equal(decoder(tokens, Z).logits, before)
            raise RuntimeError("stop")
    assert all(not p.fns for p in decoder.hook_points().values())
    assert torch.equal(decoder(tokens, Z).logits, before)


def test_the_encoder_decoders_stacks_each_take_hooks():
    """The decoder's cache from the encoder's output is the whole model's pass (its logits, bit for bit: no
    point on scores or patterns is cached, so every attention keeps the fused kernel)."""
    torch.manual_seed(5)
    model = EncoderDecoder(19, V, D, H, D_FF, 2, n_decoder_layers=L).double().eval()
    src = torch.randint(0, 19, (B, N_SRC), generator=torch.Generator().manual_seed(6))
    tgt, _ = _inputs()
    whole = model(src, tgt)
    Z, enc_cache = model.encoder.run_with_cache(src, names_filter="blocks.1.hook_resid_post")
    logits, cache = model.decoder.run_with_cache(tgt, names_filter="blocks.0.cross_attn.hook_k", Z=Z)
    assert torch.equal(Z, whole.encoder.output) and torch.equal(logits, whole.logits)
    assert list(cache) == ["blocks.0.cross_attn.hook_k"] and list(enc_cache) == ["blocks.1.hook_resid_post"]
