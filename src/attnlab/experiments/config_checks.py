"""Validation shared by the experiments' frozen config dataclasses."""

from __future__ import annotations

from attnlab.errors import ConfigError


def check_int(name: str, v, minimum: int) -> None:
    """ConfigError unless v is an int (not a bool) >= minimum; the message names the field."""
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {v!r}")
