"""A local checkpoint directory in the layout transformers writes with ``save_pretrained``.

    <dir>/config.json                   the architecture (model_type, sizes, activation, eps)
    <dir>/model.safetensors             the weights (preferred), or
    <dir>/model.safetensors.index.json  + shards, or
    <dir>/pytorch_model.bin             (read with torch.load(weights_only=True)), or its index + shards
    <dir>/tokenizer.json, vocab.txt...  the tokenizer (optional: only text input needs it)

Nothing is downloaded. Every way a directory can fail to be a checkpoint is a ConfigError
with one line saying what to change. The families that :mod:`attnlab.pretrained.loader`
turns into attnlab modules read their numbers through :func:`config_value`, so a
missing or mistyped entry names the entry and the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnlab.errors import ConfigError

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


@dataclass(frozen=True)
class Checkpoint:
    """config: the parsed config.json; tensors: name -> tensor (CPU, as stored); weights: the file
    read (an index file for sharded weights); path: the directory."""

    path: Path
    config: dict[str, Any]
    tensors: dict[str, Any]
    weights: Path


def checkpoint_dir(path: str | Path) -> Path:
    """``path`` as a checkpoint directory: it exists, is a directory, has config.json and weights."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ConfigError(f"checkpoint path {p} does not exist: pass a directory holding config.json and "
                          "model.safetensors (or pytorch_model.bin), or a shipped model name")
    if not p.is_dir():
        raise ConfigError(f"checkpoint path {p} is a file: pass the directory that holds config.json and the weights")
    if not (p / "config.json").is_file():
        raise ConfigError(f"{p} has no config.json, so it is not a checkpoint directory: pass the directory "
                          "that save_pretrained wrote")
    if not any((p / f).is_file() for f in WEIGHT_FILES):
        raise ConfigError(f"{p} has config.json but no weights: it needs one of {', '.join(WEIGHT_FILES)}")
    return p


def read_config(path: Path) -> dict[str, Any]:
    """config.json as a dict; ConfigError if it is not a JSON object."""
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path / 'config.json'} is not valid JSON ({e}): restore the file from the checkpoint") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path / 'config.json'} must hold a JSON object, got {type(config).__name__}")
    return config


def config_value(config: dict[str, Any], key: str, kind: type, *, default: Any = ..., path: Path | None = None,
                 minimum: float | None = None) -> Any:
    """config[key] checked to be a ``kind`` (int, float, str, bool) >= minimum; ``default`` when absent."""
    where = f"{path / 'config.json'}" if path is not None else "config.json"
    if key not in config or config[key] is None:
        if default is ...:
            raise ConfigError(f"{where} has no {key!r}: add it (the checkpoint's architecture needs it)")
        return default
    v = config[key]
    ok = isinstance(v, kind) and not (kind is not bool and isinstance(v, bool))
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        v, ok = float(v), True
    if not ok or (minimum is not None and v < minimum):
        bound = "" if minimum is None else f" >= {minimum:g}"
        raise ConfigError(f"{where}: {key} must be a {kind.__name__}{bound}, got {config[key]!r}")
    return v


def read_checkpoint(path: str | Path) -> Checkpoint:
    """config.json and every tensor of the weights of the checkpoint directory ``path``."""
    p = checkpoint_dir(path)
    config = read_config(p)
    for name in WEIGHT_FILES:
        if (p / name).is_file():
            weights = p / name
            break
    if weights.name.endswith(".index.json"):
        tensors = {}
        for shard in _shards(weights):
            tensors.update(_read_weights(p / shard))
    else:
        tensors = _read_weights(weights)
    return Checkpoint(p, config, tensors, weights)


def _shards(index: Path) -> list[str]:
    try:
        weight_map = json.loads(index.read_text())["weight_map"]
        shards = sorted(set(weight_map.values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise ConfigError(f"{index} is not a weight index (a JSON object with a 'weight_map'): restore it") from None
    missing = [s for s in shards if not (index.parent / s).is_file()]
    if missing:
        raise ConfigError(f"{index} names {len(missing)} shard(s) not in {index.parent}, first {missing[0]!r}: "
                          "copy every shard next to the index")
    return shards


def _read_weights(file: Path) -> dict[str, Any]:
    if file.suffix == ".safetensors":
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise ConfigError(f"reading {file.name} needs the safetensors package: pip install safetensors") from None
        try:
            return load_file(str(file))
        except Exception as e:  # safetensors raises its own error types for truncated or foreign files
            raise ConfigError(f"{file} is not a readable safetensors file ({type(e).__name__}): restore it") from None
    import torch

    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as e:  # unpickling errors, truncated archives, non-tensor payloads
        raise ConfigError(f"{file} is not a readable PyTorch state dict ({type(e).__name__}): restore it") from None
    if not isinstance(state, dict):
        raise ConfigError(f"{file} holds a {type(state).__name__}, not a state dict of tensors")
    return dict(state)


def strip_prefix(tensors: dict[str, Any], prefixes: tuple[str, ...]) -> dict[str, Any]:
    """Drop the base-model prefix a task model stores its body under ("bert.", "transformer.", ...),
    and rename the "gamma"/"beta" of LayerNorms in older BERT files to "weight"/"bias"."""
    for prefix in prefixes:
        if any(k.startswith(prefix) for k in tensors):
            tensors = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
            break
    return {re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", k)): v
            for k, v in tensors.items()}


def check_tensors(tensors: dict[str, Any], expected: dict[str, tuple[int, ...]], weights: Path,
                  layer_pattern: str, n_layers: int) -> None:
    """Every expected tensor present with its shape, no layer beyond n_layers; ConfigError otherwise."""
    missing = [k for k in expected if k not in tensors]
    if missing:
        raise ConfigError(f"{weights} lacks {len(missing)} tensor(s) that config.json implies, first {missing[0]!r}: "
                          "the weights do not belong to this config.json")
    for k, shape in expected.items():
        got = tuple(tensors[k].shape)
        if got != shape:
            raise ConfigError(f"{weights}: tensor {k!r} has shape {got}, config.json implies {shape}: "
                              "the weights do not belong to this config.json")
    deeper = sorted({int(m.group(1)) for k in tensors if (m := re.match(layer_pattern, k))} - set(range(n_layers)))
    if deeper:
        raise ConfigError(f"{weights} has layer {deeper[0]} but config.json says {n_layers} layers: "
                          "the weights do not belong to this config.json")
