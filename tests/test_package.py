"""``import attnlab`` is cheap and gives the attention operators and the library's packages on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import attnlab
from tolerances import FLOAT64


def test_import_attnlab_loads_nothing_heavy():
    code = "import sys, attnlab; print('torch' in sys.modules, 'attnlab.ops' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize("name, module", [
    ("softmax_attention", "attnlab.ops.softmax"), ("reference_attention", "attnlab.ops.reference"),
    ("linear_attention", "attnlab.ops.linear.attention"), ("sliding_window_attention", "attnlab.ops.sparse.window"),
    ("bigbird_attention", "attnlab.ops.sparse.structured"), ("linformer_attention", "attnlab.ops.lowrank"),
])
def test_operators_are_attributes_of_the_package(name, module):
    fn = getattr(attnlab, name)
    assert callable(fn) and fn.__module__ == module and name in dir(attnlab)


def test_packages_load_on_first_use_and_unknown_names_raise():
    assert attnlab.nn.__name__ == "attnlab.nn" and attnlab.checks.VERDICTS[0] == "reproduced"
    q = torch.randn(2, 5, 7, dtype=torch.float64)
    out = attnlab.softmax_attention(q, q, q, causal=True)
    ref = attnlab.reference_attention(q, q, q, causal=True)
    assert torch.allclose(out.output, ref.output, atol=FLOAT64)
    with pytest.raises(AttributeError, match="module 'attnlab' has no attribute 'nope'"):
        attnlab.nope


def test_python_dash_m_attnlab_is_the_command_line():
    """``python -m attnlab`` runs the same command line: its version line, and a bad option's one line and exit 2."""
    run = [sys.executable, "-m", "attnlab"]
    p = subprocess.run([*run, "--version"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("attnlab "), p.stderr
    p = subprocess.run([*run, "verify", "--seed", "-1"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "attnlab: error: --seed must be an integer in [0, 4294967295], got -1"], p.stderr
