"""Runs tests/ops/fake_accelerator_cases.py (operators and modules on a fake, non-CPU device) in a
process of its own: registering the fake device cannot be undone and would change how PyTorch
behaves in the rest of the suite (that file's docstring says why and what it checks)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

CASES = Path(__file__).with_name("fake_accelerator_cases.py")
ROOT = Path(__file__).resolve().parents[2]


def test_operators_and_modules_stay_on_a_fake_accelerator():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    proc = subprocess.run([sys.executable, "-m", "pytest", str(CASES), "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 45 and "skipped" not in summary, summary
