"""``attnlab construct NAME``: build a registered construction, check it, save it.

Parameters arrive as text (``--set key=value``) or Python values and go through the
one conversion and validation path (:mod:`attnlab.config`); ``--out`` is checked
before anything is built, and the ``.npz`` is written atomically (temp file +
rename) with exactly the arrays the construction returns, in the paper's notation.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from attnlab.config import build_config, coerce_field
from attnlab.errors import ConfigError
from attnlab.registry import Construction, ConstructionResult, get_construction
from attnlab.runs.rundir import atomic_write_bytes


def construct(name: str, settings: Mapping[str, Any] | None = None, *,
              out: str | Path | None = None) -> tuple[Construction, Any, ConstructionResult, dict]:
    """Build construction ``name`` with ``settings`` (field -> value or text).

    Returns (construction, params, result, summary) where ``summary`` is what
    ``--json`` prints: the parameters, the check's values, verdict, notes and ``out``.
    """
    c = get_construction(name)
    values = {k: coerce_field(f"construction {name}", c.params_cls, k, v, "--set", noun="parameter")
              for k, v in (settings or {}).items()}
    params = build_config(c.params_cls, values, what=f"construct {name}")
    target = writable(out) if out is not None else None
    result = c.build(params)
    if not isinstance(result, ConstructionResult):
        raise TypeError(f"construction {name} returned {type(result).__name__}, not ConstructionResult")
    summary = {"construction": name, "paper": c.paper, "params": dataclasses.asdict(params), **result.to_dict()}
    if target is not None:
        save_npz(target, result.arrays)
        summary["out"] = str(target)
    return c, params, result, summary


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write arrays to ``path`` atomically (temp file + rename); ConfigError if it cannot."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    try:
        atomic_write_bytes(path, buf.getvalue())
    except OSError as err:
        raise ConfigError(f"cannot write --out {path}: {err.strerror or err}; give a writable file path") from None


def writable(out: str | Path) -> Path:
    """``out`` as a Path if a file can be written there; ConfigError saying what to change."""
    path = Path(out)
    if path.is_dir():
        raise ConfigError(f"--out {out} is a directory; give a file path such as {path / 'weights.npz'}")
    if not path.parent.is_dir():
        raise ConfigError(f"--out {out}: directory {path.parent} does not exist; create it or give another path")
    return path
