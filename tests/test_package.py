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


def test_the_command_line_starts_without_torch():
    """``import attnlab.cli`` and ``attnlab --help`` load no torch (about 1.5 s of a command's start on 2 cores);
    an unknown attribute of the package raises at once, without importing the operators."""
    code = ("import sys, attnlab; assert not hasattr(attnlab, 'estimates_nope'); ops = 'attnlab.ops' in sys.modules\n"
            "import attnlab.cli\n"
            "try:\n    attnlab.cli.main(['--help'])\nexcept SystemExit as e:\n    code = e.code\n"
            "print(ops, 'torch' in sys.modules, code, file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "Usage: attnlab" in p.stdout, p.stderr
    assert p.stderr.split() == ["False", "False", "0"], p.stderr


def test_the_name_table_lists_every_operator_where_it_is_defined():
    """``attnlab.__getattr__`` reads a fixed name -> module table: it must list each module's ``__all__``."""
    import importlib
    import importlib.util

    for module, names in attnlab._OPERATORS.items():
        m = importlib.import_module(module)
        assert all(hasattr(m, n) for n in names), module
        if module != "attnlab.ops.lowrank":  # lowrank has no __all__: the table names its four public functions
            assert sorted(names) == sorted(m.__all__), module
    assert len(attnlab._MODULE_OF) == sum(len(n) for n in attnlab._OPERATORS.values())  # no name in two modules
    for name in attnlab._PACKAGES:
        assert importlib.util.find_spec(f"attnlab.{name}") is not None, name


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
