"""TEMPORARY: the experiment helpers of the flat layout, while experiments move to
attnlab.config / attnlab.results. Deleted once no module imports it."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from attnlab.errors import ConfigError

SCALES = ("quick", "paper")


def _resolve(cfg: Any, presets: dict[str, dict[str, Any]]) -> None:
    """Validate scale/seed/device and fill the fields left None from the scale preset."""
    if cfg.scale not in SCALES:
        raise ConfigError(f"scale must be one of {', '.join(SCALES)}, got {cfg.scale!r}")
    if not isinstance(cfg.seed, int) or cfg.seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {cfg.seed!r}")
    if cfg.device != "cpu" and not cfg.device.startswith("cuda"):
        raise ConfigError(f"device must be 'cpu' or 'cuda', got {cfg.device!r}")
    for f in fields(cfg):
        if getattr(cfg, f.name) is None and f.name in presets[cfg.scale]:
            object.__setattr__(cfg, f.name, presets[cfg.scale][f.name])


def _positive_ints(name: str, values, minimum: int = 1) -> tuple[int, ...]:
    values = tuple(values)
    if not values or not all(isinstance(v, int) and v >= minimum for v in values):
        raise ConfigError(f"{name} must be a non-empty list of integers >= {minimum}, got {values!r}")
    return values


def _log(run_dir, record: dict) -> None:
    if run_dir is not None:
        run_dir.append_metric(record)


def _row(quantity, paper_value, measured, expected, passed: bool | None, detail="") -> dict:
    status = "info" if passed is None else ("pass" if passed else "FAIL")
    return {"quantity": quantity, "paper_value": paper_value, "measured": measured,
            "expected": expected, "status": status, "detail": detail}


