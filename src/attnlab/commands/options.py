"""What several verbs check in their options before any work starts: ``key=value`` lists (``--set``,
``--grid``), an ``--out`` that can be written, a ``--resume`` that has something to continue, and the
command line a run directory records. Each refusal is a one-line :class:`attnlab.errors.ConfigError`
that says what to change."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from attnlab.errors import ConfigError


def key_values(options: Sequence[str] | None, flag: str, example: str) -> dict[str, str]:
    """'key=value' options as a dict; ConfigError for a missing '=' or a repeated key."""
    out: dict[str, str] = {}
    for opt in options or []:
        key, eq, value = opt.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"{flag} expects key=value, e.g. {flag} {example}, got {opt!r}")
        if key in out:
            raise ConfigError(f"{flag} {key} is given twice; give each key once")
        out[key] = value.strip()
    return out


def check_out_path(out: str | None, flag: str, default: str | None = None) -> None:
    """Refuse, before any work starts, an empty --out or one where nothing can be written (when --out
    is not given, the ``default`` folder, e.g. runs/ in the working directory); the commands check the
    rest (a file given for a directory, a run already there)."""
    from attnlab.runs.rundir import check_writable

    if out is None:
        if default is not None:
            check_writable(default, flag)
        return
    if not out.strip():
        raise ConfigError(f"{flag} is empty; give a path")
    check_writable(out, flag)


def check_resume(out: str | None, marker: str, what: str) -> None:
    """--resume continues a run that exists: refuse a missing --out, or one without ``marker``,
    instead of silently starting afresh."""
    if out is None:
        raise ConfigError(f"--resume continues the {what} in --out; give --out DIR")
    if not (Path(out) / marker).is_file():
        raise ConfigError(f"--resume: {out} holds no {what} to continue (no {marker}); drop --resume to start one")


def command_argv() -> list[str]:
    """The command line as typed (``attnlab ...``), which a run directory records; empty when there is none."""
    return ["attnlab", *sys.argv[1:]] if sys.argv and sys.argv[0] else []
