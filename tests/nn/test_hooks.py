"""Hook points on attnlab's own stacks (a small Llama-style decoder and a post-LN encoder, float64):
names, shapes, identities between hook points, bit-identity of hooks that return their input, the
fused path kept without score/pattern hooks, and the scoped context."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.nn import BlockConfig, Encoder, RoPE
from attnlab.nn.hooked import TL_NAMES, tl_name
from attnlab.nn.hooks import HookPoint
from attnlab.ops import fused
from tolerances import FLOAT64

# distinct sizes: d = 24 = 6 heads x 4 (RoPE needs an even d_head); the Llama-style stack shares H_kv = 2
# key/value heads (groups of 3)
D, H, D_HEAD, H_KV, D_FF, L, V, B, N = 24, 6, 4, 2, 14, 3, 23, 5, 7
PER_BLOCK = ("hook_resid_pre", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_rot_q", "attn.hook_rot_k",
             "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "hook_attn_out", "hook_resid_mid",
             "mlp.hook_post", "hook_mlp_out", "hook_resid_post")


def _llama() -> Encoder:
    torch.manual_seed(0)
    return Encoder(V, D, H, D_FF, L, positional="none", causal=True, embedding_scale=False,
                   block=BlockConfig(norm="rms", norm_position="pre", bias=False, ffn="gated", activation="silu",
                                     n_kv_heads=H_KV), qkv_transform=RoPE(1e4), lm_head="tied").double().eval()


def _bert() -> Encoder:
    torch.manual_seed(1)
    m = Encoder(V, D, H, D_FF, L, positional="learned", embedding_scale=False, type_vocab_size=2,
                embedding_norm="standard", block=BlockConfig(norm="standard", activation="gelu")).double().eval()
    with torch.no_grad():  # nonzero biases and gains so a wiring error shows
        for name, p in m.named_parameters():
            if name.endswith(("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2", "beta", "gamma")):
                p.add_(torch.randn_like(p) * 0.3)
    return m


@pytest.fixture(scope="module", params=["llama", "bert"])
def model(request):
    return {"llama": _llama, "bert": _bert}[request.param]()


def _ids(seed=2):
    return torch.randint(0, V, (B, N), generator=torch.Generator().manual_seed(seed))


def test_names_are_transformerlens_names_in_pass_order(model):
    names = list(model.hook_points())
    expected = ["hook_embed"] + [f"blocks.{l}.{p}" for l in range(L) for p in PER_BLOCK] + ["ln_final.hook_normalized"]
    assert names == expected
    assert tl_name("blocks.12.ffn.hook_post") == "blocks.12.mlp.hook_post" and tl_name("hook_normalized") == \
        "ln_final.hook_normalized" and tl_name("blocks.3.attn.hook_z") == "blocks.3.attn.hook_z"
    assert set(TL_NAMES) == {"blocks.{l}.mlp.hook_post", "ln_final.hook_normalized",
                             *(f"blocks.{{l}}.{p}" for p in PER_BLOCK if p.startswith("attn."))}  # a Decoder's self_attn


def test_cache_shapes(model):
    _, cache = model.run_with_cache(_ids())
    h_kv = H_KV if model.qkv_transform is not None else H
    shapes = {"hook_embed": (B, N, D), "blocks.1.attn.hook_q": (B, N, H, D_HEAD),
              "blocks.1.attn.hook_k": (B, N, h_kv, D_HEAD), "blocks.1.attn.hook_v": (B, N, h_kv, D_HEAD),
              "blocks.1.attn.hook_attn_scores": (B, H, N, N), "blocks.1.attn.hook_pattern": (B, H, N, N),
              "blocks.1.attn.hook_z": (B, N, H, D_HEAD),
              "blocks.1.mlp.hook_post": (B, N, D_FF), "blocks.2.hook_resid_post": (B, N, D),
              "ln_final.hook_normalized": (B, N, D)}
    assert {k: tuple(cache[k].shape) for k in shapes} == shapes


def test_cache_identities(model):
    """pattern = the forward's weights; softmax(scores) = pattern; c q_rot k_rot^T = scores on allowed pairs;
    z = P v; sum_h z_h W_O,h + b_O = attn_out; resid_post(l) = resid_pre(l + 1); the residual sums."""
    ids = _ids()
    _, cache = model.run_with_cache(ids)
    ref = model(ids, output_attentions=True)
    G = H // (H_KV if model.qkv_transform is not None else H)
    for l, block in enumerate(model.blocks):
        c = lambda p: cache[f"blocks.{l}.{p}"]  # noqa: E731
        a = block.attn
        P = c("attn.hook_pattern")
        assert (P - ref.attentions[l]).abs().max().item() <= FLOAT64
        assert (torch.softmax(c("attn.hook_attn_scores"), -1) - P).abs().max().item() <= FLOAT64
        q, k, v = c("attn.hook_rot_q"), c("attn.hook_rot_k").repeat_interleave(G, 2), c("attn.hook_v").repeat_interleave(G, 2)
        S = torch.einsum("bqhd,bkhd->bhqk", q, k) / D_HEAD ** 0.5
        allowed = torch.isfinite(c("attn.hook_attn_scores"))
        assert (S - c("attn.hook_attn_scores"))[allowed].abs().max().item() <= FLOAT64
        assert bool(allowed.all()) != model.causal
        assert (torch.einsum("bhqk,bkhd->bqhd", P, v) - c("attn.hook_z")).abs().max().item() <= FLOAT64
        out = torch.einsum("bqhd,hdm->bqm", c("attn.hook_z"), a.W_O) + (0 if a.b_O is None else a.b_O)
        assert (out - c("hook_attn_out")).abs().max().item() <= FLOAT64
        if l + 1 < L:
            assert torch.equal(c("hook_resid_post"), cache[f"blocks.{l + 1}.hook_resid_pre"])
        mid, post = c("hook_resid_pre") + c("hook_attn_out"), c("hook_resid_mid") + c("hook_mlp_out")
        if block.norm_position == "post":  # post-LN: resid_mid = LN_1(resid_pre + attn_out), likewise LN_2
            mid, post = block.norm1(mid), block.norm2(post)
        assert (mid - c("hook_resid_mid")).abs().max().item() <= FLOAT64
        assert (post - c("hook_resid_post")).abs().max().item() <= FLOAT64


def _identity(x, name):
    return x


def test_hooks_that_return_their_input_change_no_bit(model, monkeypatch):
    """Every point but scores and pattern: the same fused pass; with those two: the explicit pass of
    output_attentions; both bit for bit."""
    ids = _ids()
    calls = []
    real = fused.F.scaled_dot_product_attention
    monkeypatch.setattr(fused.F, "scaled_dot_product_attention", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    plain = model(ids).logits if model.lm_head != "none" else model(ids).output
    n_plain = len(calls)
    keep = [(n, _identity) for n in model.hook_points() if not n.endswith(("attn_scores", "pattern"))]
    assert torch.equal(model.run_with_hooks(ids, keep), plain) and len(calls) == 2 * n_plain == 2 * L
    explicit = model(ids, output_attentions=True)
    every = model.run_with_hooks(ids, [(lambda n: True, _identity)])
    assert torch.equal(every, explicit.output if explicit.logits is None else explicit.logits)
    assert len(calls) == 2 * L  # scores/pattern hooks left the fused kernel


def test_an_error_inside_the_context_leaves_the_model_as_it_was(model):
    ids = _ids()
    before = model.run_with_hooks(ids)

    def zero(x, name):
        return torch.zeros_like(x)

    with pytest.raises(RuntimeError, match="stop"):
        with model.hooks([("blocks.0.attn.hook_z", zero), (lambda n: n.endswith("resid_mid"), zero)]):
            assert not torch.equal(model.run_with_hooks(ids), before)
            raise RuntimeError("stop")
    assert all(not p.fns for p in model.hook_points().values())
    assert torch.equal(model.run_with_hooks(ids), before)


def test_nested_contexts_detach_only_their_own_hooks(model):
    seen = []
    with model.hooks([("hook_embed", lambda x, n: seen.append("outer"))]):
        with model.hooks([("hook_embed", lambda x, n: seen.append("inner"))]):
            model(_ids())
        model(_ids())
    model(_ids())
    assert seen == ["outer", "inner", "outer"]


def test_a_zeroed_head_equals_a_zeroed_W_O_row(model):
    ids = _ids()

    def zero_head(z, name):
        z = z.clone()
        z[:, :, 3] = 0
        return z

    got = model.run_with_hooks(ids, [("blocks.1.attn.hook_z", zero_head)])
    W_O = model.blocks[1].attn.W_O
    saved = W_O.detach().clone()
    with torch.no_grad():
        W_O[3] = 0
        want = model.run_with_hooks(ids)
        W_O.copy_(saved)
    assert (got - want).abs().max().item() <= FLOAT64


def test_gradients_follow_the_callers_mode(model):
    ids = _ids()
    with torch.no_grad():
        out, cache = model.run_with_cache(ids, "blocks.1.attn.hook_z")
    assert not out.requires_grad and not cache["blocks.1.attn.hook_z"].requires_grad
    kept = []
    with torch.enable_grad():
        out = model.run_with_hooks(ids, [("blocks.1.attn.hook_z", lambda z, n: (z.retain_grad(), kept.append(z))[0])])
        out.sum().backward()
    model.zero_grad()
    assert kept[0].grad.shape == (B, N, H, D_HEAD) and kept[0].grad.abs().max().item() > 0


def test_bad_names_and_hooks(model):
    with pytest.raises(ConfigError, match=r"no hook point 'blocks.0.hook_resid_prex' on this model: did you mean "
                                          r"blocks.0.hook_resid_pre"):
        model.run_with_hooks(_ids(), [("blocks.0.hook_resid_prex", _identity)])
    with pytest.raises(ConfigError, match=r"the hook on blocks.0.hook_resid_mid returned \(5, 7\); return None or "
                                          r"a tensor of the input's shape \(5, 7, 24\)"):
        model.run_with_hooks(_ids(), [("blocks.0.hook_resid_mid", lambda x, n: x[..., 0])])
    assert all(not p.fns for p in model.hook_points().values())
    with pytest.raises(ConfigError, match="a hook must be a function"):
        HookPoint().add_hook(3)
    with pytest.raises(ConfigError, match="did you mean blocks.0.mlp.hook_post"):  # TransformerLens' names only
        model.run_with_cache(_ids(), ["blocks.0.ffn.hook_post"])


def test_encode_resumes_from_a_cached_stream_and_reads_logits_at_one_position():
    """encode(resid_pre of block l, start=l) ends where the whole pass ends (float64, <= 1e-12);
    logits_at=p gives the whole pass's logits at p; a start beyond the blocks is one line."""
    m, ids = _llama(), _ids()
    with torch.no_grad():
        whole = m(ids)
        _, cache = m.run_with_cache(ids)
        for l in (0, 1, L):
            X = cache[f"blocks.{l}.hook_resid_pre"] if l < L else cache[f"blocks.{L - 1}.hook_resid_post"]
            resumed = m.encode(X, start=l, logits_at=-1)
            assert torch.allclose(resumed.output, whole.output, rtol=0, atol=1e-12), l
            assert torch.allclose(resumed.logits, whole.logits[:, -1], rtol=0, atol=1e-12), l
    with pytest.raises(ConfigError, match=f"start must be a block index 0..{L}, got {L + 1}"):
        m.encode(cache["blocks.0.hook_resid_pre"], start=L + 1)
