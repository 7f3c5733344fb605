"""Helpers shared by test modules (importable: tests/conftest.py puts this directory on sys.path)."""

from __future__ import annotations

from attnlab.cli import main


def exit_status(argv: list[str]) -> int:
    """Run the command line in-process; its exit status (0 when it returns normally)."""
    try:
        main(argv)
    except SystemExit as e:
        return int(e.code or 0)
    return 0
