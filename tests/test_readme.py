"""The README's table of what reproduces is what the claims and the ledgers give (seed 0)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


tables = _script("readme_tables")


def test_the_readmes_claims_table_is_what_verify_and_the_ledgers_give():
    """Each claim is computed once per session (tests/claim_cache.py); run
    `python scripts/readme_tables.py --write` after a verdict or a ledger changes."""
    assert tables.readme_table((ROOT / "README.md").read_text()) == tables.table()
