"""The README's account of what reproduces is what the claims, the ledgers and the stored runs give."""

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
README = (ROOT / "README.md").read_text()


def test_the_readmes_claims_table_is_what_verify_and_the_ledgers_give():
    """Each claim is computed once per session (tests/claim_cache.py); run
    `python scripts/readme_tables.py --write` after a verdict or a ledger changes."""
    assert tables.between(README, tables.TABLE) == tables.table()


def test_the_readmes_findings_are_written_from_the_stored_runs():
    """The quick runs stored in tests/fixtures/reports/ and the runs in results/paper-scale/: refresh a
    fixture or commit a run, then `python scripts/readme_tables.py --write`."""
    assert tables.between(README, tables.FINDINGS) == tables.findings()
    assert "the text" in tables.findings() and "results/paper-scale/logic/" in tables.findings()
