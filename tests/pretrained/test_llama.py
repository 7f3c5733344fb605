"""Llama-family decoders (SmolLM2 from its GGUF file; Llama, Qwen2 and Mistral configs with random
weights) against transformers on the same float64 weights.

transformers computes three things in float32 even in a float64 model: RMSNorm (the input is cast
to float32), the RoPE angles (inv_freq and p theta in float32) and the eager softmax
(``dtype=torch.float32``). Those are choices for half-precision training, not the model's
definition, and they put ~1e-7 relative noise on every layer. The reference here runs them in
float64 (:func:`float64_reference`: RMSNorm and RoPE forwards in the input dtype, and an eager
attention registered through transformers' AttentionInterface whose softmax keeps the dtype);
everything else is transformers' own code. Against transformers unchanged, the difference is the
size of that float32 rounding (asserted separately).

Padding: left padding with the loader's positions passed to transformers too (p_i counts real
tokens), right padding with its defaults; padded query rows are not compared (attnlab gives a
query that sees only padding weight 0, transformers a uniform row).
"""

from __future__ import annotations

import contextlib

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.pretrained.sizes import SMOLLM2, ModelSize
from attnlab.pretrained import load_pretrained
from tolerances import FLOAT32, FLOAT64

transformers = pytest.importorskip("transformers")
transformers.utils.logging.disable_progress_bar()

HIDDEN_REL = 1e-10  # max |difference| / max |reference| per tensor (the parity bound)
LOGITS_ABS = 1e-8
TEXTS = ["The capital of France is", "Attention is a weighted average of values, and every weight is positive."]


@contextlib.contextmanager
def float64_reference(model_types=("llama", "qwen2", "mistral")):
    """transformers' Llama-family modules with RMSNorm, RoPE and the softmax in the input dtype."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    def rms_forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    def rope_forward(self, x, position_ids):
        cfg = self.config
        params = getattr(cfg, "rope_parameters", None) or {}
        base = params.get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
        d = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        freqs = position_ids[..., None].double() * inv
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        G = query.shape[1] // key.shape[1]
        key, value = key.repeat_interleave(G, 1), value.repeat_interleave(G, 1)
        w = query @ key.transpose(2, 3) * scaling
        if attention_mask is not None:
            w = w + attention_mask
        w = torch.softmax(w, dim=-1)
        return (w @ value).transpose(1, 2).contiguous(), w

    AttentionInterface.register("float64_eager", attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register("float64_eager", eager_mask)
    patches = []
    for t in model_types:
        mod = __import__(f"transformers.models.{t}.modeling_{t}", fromlist=["x"])
        prefix = {"llama": "Llama", "qwen2": "Qwen2", "mistral": "Mistral"}[t]
        for cls_name, fn in ((f"{prefix}RMSNorm", rms_forward), (f"{prefix}RotaryEmbedding", rope_forward)):
            cls = getattr(mod, cls_name)
            patches.append((cls, cls.forward))
            cls.forward = fn
    try:
        yield "float64_eager"
    finally:
        for cls, fn in patches:
            cls.forward = fn


def _reference(hf, e, *, positions: bool):
    kw = {"position_ids": e.position_ids} if positions else {}
    with torch.no_grad():
        return hf(input_ids=e.input_ids, attention_mask=(~e.key_padding_mask).long(), output_hidden_states=True,
                  output_attentions=True, **kw)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).abs().max() / b.abs().max()).item()


def _compare(pm, hf, padding_side: str) -> dict[str, float]:
    e = pm.encode(TEXTS, padding_side=padding_side)
    ours = pm.forward(e.input_ids, e.key_padding_mask, position_ids=e.position_ids)
    theirs = _reference(hf, e, positions=padding_side == "left")
    real = ~e.key_padding_mask  # (B, n)
    L = len(ours.attentions)
    # transformers' last hidden state is after the final norm (attnlab's output); the others are block outputs
    ours_h = list(ours.hidden_states[:L]) + [ours.output]
    hidden = max(_rel(a[real], b[real]) for a, b in zip(ours_h, theirs.hidden_states, strict=True))
    attn = max(_rel(a.transpose(1, 2)[real], b.transpose(1, 2)[real])
               for a, b in zip(ours.attentions, theirs.attentions, strict=True))
    logits = (ours.logits[real] - theirs.logits[real]).abs().max().item()
    return {"hidden": hidden, "attention": attn, "logits": logits, "tokens": int(real.sum())}


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("gguf")
    from attnlab.pretrained.gguf import smollm2_path

    path = smollm2_path()
    pm = load_pretrained("smollm2", dtype="float64")
    with float64_reference() as impl:
        hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                               attn_implementation=impl)
    return pm, hf.to(torch.float64).eval()


@pytest.mark.slow
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_smollm2_matches_transformers_in_float64(smollm2, padding_side):
    pm, hf = smollm2
    with float64_reference():
        d = _compare(pm, hf, padding_side)
    assert d["tokens"] == 19  # 5 + 14 tokens, padding excluded
    assert d["hidden"] <= HIDDEN_REL, d
    assert d["attention"] <= HIDDEN_REL, d
    assert d["logits"] <= LOGITS_ABS, d


@pytest.mark.slow
def test_smollm2_against_transformers_float32_internals(smollm2):
    """Unpatched transformers rounds RMSNorm, RoPE and the softmax to float32: the gap is that rounding
    (well above 1e-10, well below 1e-3 of the logits' scale), not a modelling difference."""
    pm, hf = smollm2
    d = _compare(pm, hf, "right")
    assert 1e-9 < d["logits"] < 1e-2, d


@pytest.mark.slow
def test_smollm2_architecture_and_paris(smollm2):
    pm, _ = smollm2
    a = pm.architecture
    assert (a.n_layers, a.d_model, a.n_heads, a.kv_heads, a.d_head, a.d_ff) == (30, 576, 9, 3, 64, 1536)
    assert (a.rope_base, a.eps, a.max_len, a.vocab_size, a.tied) == (1e5, pytest.approx(1e-5), 8192, 49152, True)
    assert ModelSize.of(a) == SMOLLM2  # the sizes estimates count without loading
    loaded = sum(p.numel() for p in pm.model.parameters())  # 134,515,008: + 61 RMSNorm gains
    assert SMOLLM2.parameters == 134_479_872 and loaded - SMOLLM2.parameters == 61 * 576
    out = pm.run("The capital of France is", output_attentions=False, output_hidden_states=False)
    top = out.logits[0, -1].topk(2)
    assert pm.tokenizer.convert_ids_to_tokens(top.indices.tolist()) == ["\u0120Paris", "\u0120the"]
    assert top.values.tolist() == pytest.approx([17.3713, 14.8886], abs=1e-3)
    assert out.logits.shape == (1, 5, 49152)


@pytest.mark.slow
def test_gguf_rows_are_restored_to_the_half_split_layout(smollm2):
    """The loader's W_Q/W_K equal transformers' un-permuted q_proj/k_proj (its GGUF conversion), and the
    raw GGUF rows differ from them: the permutation is real and undone."""
    pm, hf = smollm2
    attn = pm.model.blocks[3].attn
    W_q = hf.model.layers[3].self_attn.q_proj.weight.T  # (d, H d_h)
    W_k = hf.model.layers[3].self_attn.k_proj.weight.T
    assert torch.equal(attn.W_Q.permute(1, 0, 2).reshape(576, -1), W_q)
    assert torch.equal(attn.W_K.permute(1, 0, 2).reshape(576, -1), W_k)
    from attnlab.ops.rotary import adjacent_pair_rows

    assert not torch.equal(adjacent_pair_rows(W_k.T, 3), W_k.T)


# ---- Llama-family configuration directories, random weights -------------------------------------------
def _tiny(tmp_path, model_type: str, **extra):
    cfgs = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config, "mistral": transformers.MistralConfig}
    kw = dict(vocab_size=300, hidden_size=48, intermediate_size=80, num_hidden_layers=3, num_attention_heads=6,
              num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, tie_word_embeddings=False)
    kw.update(extra)
    cfg = cfgs[model_type](**kw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    with torch.no_grad():  # norms away from 1 so that a swapped gamma shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
            elif name.endswith("bias"):
                p.normal_(0, 0.3)
    model.save_pretrained(tmp_path)
    return tmp_path


@pytest.mark.parametrize("model_type,extra", [("llama", {}), ("llama", {"attention_bias": True}),
                                              ("qwen2", {}), ("mistral", {"sliding_window": None}),
                                              ("llama", {"tie_word_embeddings": True})])
def test_llama_family_directories_match_transformers(tmp_path, model_type, extra):
    path = _tiny(tmp_path, model_type, **extra)
    pm = load_pretrained(path, dtype="float64")
    ids = torch.randint(0, 300, (3, 17), generator=torch.Generator().manual_seed(1))
    pad = torch.zeros(3, 17, dtype=torch.bool)
    pad[1, :5] = True  # left padding
    pos = pm.position_ids(pad)
    ours = pm.forward(ids, pad, position_ids=pos)
    with float64_reference() as impl:
        hf = transformers.AutoModelForCausalLM.from_pretrained(str(path), attn_implementation=impl)
        hf = hf.to(torch.float64).eval()
        with torch.no_grad():
            theirs = hf(input_ids=ids, attention_mask=(~pad).long(), position_ids=pos, output_hidden_states=True,
                        output_attentions=True)
    real = ~pad
    L = len(ours.attentions)
    ours_h = list(ours.hidden_states[:L]) + [ours.output]
    for a, b in zip(ours_h, theirs.hidden_states, strict=True):
        assert _rel(a[real], b[real]) <= HIDDEN_REL
    for a, b in zip(ours.attentions, theirs.attentions, strict=True):
        assert _rel(a.transpose(1, 2)[real], b.transpose(1, 2)[real]) <= HIDDEN_REL
    assert (ours.logits[real] - theirs.logits[real]).abs().max().item() <= LOGITS_ABS


@pytest.mark.parametrize("scaling,match", [({"rope_type": "yarn", "factor": 4.0}, "yarn"),
                                           ({"rope_type": "dynamic", "factor": 2.0}, "dynamic")])
def test_unknown_rope_scaling_is_one_line(tmp_path, scaling, match):
    path = _tiny(tmp_path, "llama")
    import json

    cfg = json.loads((path / "config.json").read_text())
    cfg["rope_scaling"] = scaling
    cfg.pop("rope_parameters", None)
    (path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match=match) as e:
        load_pretrained(path)
    assert "\n" not in str(e.value)


def test_truncated_and_foreign_gguf_files_are_one_line(tmp_path):
    pytest.importorskip("gguf")
    from attnlab.pretrained.gguf import smollm2_path

    data = smollm2_path().read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises(ConfigError, match="not a readable GGUF") as e:
        load_pretrained(cut)
    assert "\n" not in str(e.value)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(ConfigError, match="not a readable GGUF"):
        load_pretrained(junk)
    with pytest.raises(ConfigError, match="does not exist"):
        load_pretrained(tmp_path / "missing.gguf")


def test_foreign_gguf_architecture_is_refused(tmp_path):
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "phi.gguf"
    w = gguf.GGUFWriter(str(path), "phi2")
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ConfigError, match="architecture 'phi2' is not supported"):
        load_pretrained(path)


# ---- long context: exact rows from the log-sum-exp ----------------------------------------------------
@pytest.mark.slow
def test_attention_rows_equal_the_models_own_weights(smollm2):
    """At n = 200 (float64) the rows of (layer 5, head 7) equal the weights of the full pass to 1e-12."""
    pm, _ = smollm2
    ids = torch.randint(0, 49152, (1, 200), generator=torch.Generator().manual_seed(2))
    full = pm.forward(ids, output_hidden_states=False).attentions[5][:, 7]  # (1, n, n)
    rows = pm.attention_rows(ids, 5, 7, slice(150, 200))
    assert rows.shape == (1, 50, 200)
    assert (rows - full[:, 150:200]).abs().max().item() <= FLOAT64


@pytest.mark.slow
def test_attention_rows_at_long_context_float32():
    """n = 4096 in float32: the rows of a 128-query block equal a plain softmax of the same logits (n x n,
    built here only as the reference) to 1e-6; n = 8192, the model's whole context, runs and every row sums to 1."""
    pytest.importorskip("gguf")
    pm = load_pretrained("smollm2", dtype="float32")
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 49152, (1, 4096), generator=g)
    P = pm.attention_rows(ids, 2, 4, slice(2048, 2176))
    q, k = pm.model.queries_keys(ids, 2)
    S = (q[:, 4] @ k[:, 1].transpose(-1, -2)) * 64 ** -0.5  # head 4 reads key/value head 4 // 3 = 1
    S = S.masked_fill(torch.ones(4096, 4096, dtype=torch.bool).triu(1), float("-inf"))
    assert (P - torch.softmax(S, -1)[:, 2048:2176]).abs().max().item() <= 1e-6
    ids = torch.randint(0, 49152, (1, 8192), generator=g)
    P = pm.attention_rows(ids, 1, 0, slice(8064, 8192))
    assert P.shape == (1, 128, 8192)
    assert (P.sum(-1) - 1).abs().max().item() <= FLOAT32
    with pytest.raises(ConfigError, match="exceed the model's context of 8192"):
        pm.attention_rows(torch.zeros(1, 8193, dtype=torch.int64), 1, 0, slice(0, 1))


def test_a_quantization_gguf_cannot_dequantize_is_one_line(monkeypatch):
    gguf = pytest.importorskip("gguf")
    from attnlab.pretrained.gguf import read_gguf, smollm2_path

    def refuse(data, qtype):
        raise NotImplementedError(f"dequantization of {qtype.name} is not implemented")

    monkeypatch.setattr(gguf.quants, "dequantize", refuse)
    with pytest.raises(ConfigError, match=r"is stored as (Q8_0|Q4_1|F32), which the gguf package cannot dequantize") as e:
        read_gguf(smollm2_path())
    assert "\n" not in str(e.value)


@pytest.mark.slow
def test_forward_refuses_more_tokens_than_the_context(smollm2):
    pm, _ = smollm2
    with pytest.raises(ConfigError, match="8193 tokens exceed the model's context of 8192 positions"):
        pm.forward(torch.zeros(1, 8193, dtype=torch.int64))
