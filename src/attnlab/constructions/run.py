"""`attnlab construct NAME`: build a paper's construction on data drawn from a seed,
check it, and save weights and data in the paper's notation (NumPy .npz)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from attnlab.errors import ConfigError, UnknownNameError

CONSTRUCTIONS = ("memorization",)


def get_construction(name: str):
    """The runner for NAME; UnknownNameError lists the known names."""
    runners = {"memorization": construct_memorization}
    if name not in runners:
        raise UnknownNameError(f"unknown construction {name!r}: choose one of {', '.join(CONSTRUCTIONS)}")
    return runners[name]


def construct_memorization(*, H: int = 4, n: int = 32, d: int = 64, d_h: int = 64, T: int | None = None,
                           d_out: int = 1, seed: int = 0, shared: bool = True, out: str | None = None) -> dict:
    """Theorem 1's weights for T examples (default: the bound H(min(n, d_h) - 1) + 1) drawn
    as in §5.2 (U(0,1) tokens and queries, N(0,1) labels); returns the check's numbers.

    The .npz holds E ((n, d) shared or (T, n, d)), e (T, d), y (T, d_out), W_Q, W_K
    (H, d, d_h), W_V (H, d, d_v), W_O (H d_v, d), W_D (d, d_out): y_hat per eqs. (1)-(6).
    """
    from attnlab.constructions.memorization import build_memorizing_weights, check_memorization
    from attnlab.constructions.memorization_model import draw_dataset

    for name, v in dict(H=H, d_h=d_h).items():
        if v < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {v}")
    T = H * (min(n, d_h) - 1) + 1 if T is None else T
    target = _writable(out) if out is not None else None
    E, e, y = draw_dataset(T, n, d, d_out, shared=shared, seed=seed)
    weights = build_memorizing_weights(E, e, y, H=H, d_h=d_h, seed=seed)
    result = check_memorization(weights, E, e, y)
    result.update(H=H, n=n, d=d, d_h=d_h, d_out=d_out, seed=seed, shared_context=shared,
                  notes=list(weights.notes))
    if target is not None:
        save_npz(target, dict(E=E, e=e, y=y, **weights.matrices()))
        result["out"] = str(target)
    return result


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write arrays to ``path`` atomically (temp file + rename); ConfigError if it cannot."""
    from attnlab.reports.rundir import atomic_write_bytes

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    try:
        atomic_write_bytes(path, buf.getvalue())
    except OSError as err:
        raise ConfigError(f"cannot write --out {path}: {err.strerror or err}; give a writable file path") from None


def _writable(out: str) -> Path:
    path = Path(out)
    if path.is_dir():
        raise ConfigError(f"--out {out} is a directory; give a file path such as {path / 'weights.npz'}")
    if not path.parent.is_dir():
        raise ConfigError(f"--out {out}: directory {path.parent} does not exist; create it or give another path")
    return path
