"""Helpers shared by test modules (importable: tests/conftest.py puts this directory on sys.path)."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from attnlab.cli import main


def exit_status(argv: list[str]) -> int:
    """Run the command line in-process; its exit status (0 when it returns normally)."""
    try:
        main(argv)
    except SystemExit as e:
        return int(e.code or 0)
    return 0


# ---- the attention viewer in headless Chromium ------------------------------------------------------
def chromium() -> str:
    """The Chromium binary; skips the test where none is installed."""
    import pytest

    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def dump_dom(page: Path, fragment: str) -> tuple[str, str]:
    """The DOM of ``page`` opened at ``fragment`` ("#layer=1&...") after its scripts ran, and Chromium's log
    (console messages included)."""
    with tempfile.TemporaryDirectory(prefix="attnlab-chromium-") as profile:
        proc = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", "--dump-dom",
             page.as_uri() + fragment],
            capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def viewer_state(dom: str, uid: str) -> dict[str, str]:
    """The data-* attributes of the viewer's state element ``uid``-state (unescaped)."""
    tag = re.search(rf'<span [^>]*id="{uid}-state"[^>]*>', dom).group(0)
    return {k: html.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', tag)}


def state_pairs(text: str) -> dict[str, str]:
    """"a=1;b=2" (data-scores, data-score-ranks) -> {"a": "1", "b": "2"}."""
    return dict(kv.split("=", 1) for kv in text.split(";")) if text else {}
