"""Render a report.html with headless Chromium and write a PNG screenshot.

    python scripts/screenshot_report.py RUN_DIR/report.html OUT.png [--width 1280] [--height 2000]

Chromium runs with a fresh profile in a temporary directory and every network
feature off, so the screenshot shows exactly what the self-contained file holds.
Exit status 2 with one line on stderr if Chromium or the report is missing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"


def chromium_binary() -> str | None:
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(html: Path, png: Path, *, width: int = 1280, height: int = 2000, timeout: float = 120) -> Path:
    """Write a ``width`` x ``height`` screenshot of ``html`` to ``png``; return ``png``."""
    binary = chromium_binary()
    if binary is None:
        raise FileNotFoundError(f"Chromium not found at {CHROMIUM}; install it with `apt-get install chromium`")
    html, png = Path(html).resolve(), Path(png).resolve()
    if not html.is_file():
        raise FileNotFoundError(f"{html} does not exist")
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="attnlab-chromium-") as profile:
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png}",
            f"--window-size={width},{height}", html.as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not png.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"Chromium failed (exit {proc.returncode}): {tail[0]}")
    return png


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html", type=Path)
    ap.add_argument("png", type=Path)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=2000)
    args = ap.parse_args(argv)
    try:
        out = screenshot(args.html, args.png, width=args.width, height=args.height)
    except (FileNotFoundError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"screenshot_report: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
