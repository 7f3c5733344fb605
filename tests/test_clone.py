"""A copy of the repository outside the development tree gives the README's claims table.

The copy holds what a clone holds (src/, pyproject.toml, README.md) in a scratch folder with
nothing beside it, and runs from its own src/ as the README's editable install does. Every input
a claim reads must come with it: the thesis's attention maps were read from ``../shared/data/``
beside the development tree, which a clone does not have. ``attnlab verify`` of every paper takes
about 4 minutes on 2 cores at load 5, so the copy runs transformer-math's claims, the paper whose
inputs came from beside the tree (100 s there, under a minute on a quiet machine), and its row
must be the README's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.checks import Check, tally

ROOT = Path(__file__).resolve().parents[1]
PAPER = "transformer-math"


def readme_counts(paper: str) -> list[str]:
    """The claim counts of ``paper``'s row in the README's claims table (texts, attnlab's own, sanity)."""
    readme = (ROOT / "README.md").read_text()
    table = readme.split("<!-- claims-table", 1)[1].split("<!-- /claims-table -->", 1)[0]
    row = next(line for line in table.splitlines() if line.startswith(f"| {paper} |"))
    return [cell.strip() for cell in row.strip("|").split("|")][1:4]


def counts(rows: list[dict]) -> list[str]:
    """The same three cells, from ``attnlab verify --json``'s rows (as scripts/readme_tables.py counts them)."""
    t = tally(Check.from_dict(r) for r in rows)
    return [f"{t.text['reproduced']} / {t.text['differs']} ({t.findings}) / {t.text['inconclusive']}",
            f"{t.own['holds']} / {t.own['refuted']} / {t.own['inconclusive']}", str(t.sanity)]


def copy_of_the_repository(scratch: Path) -> Path:
    """src/, pyproject.toml and README.md copied to ``scratch/repo`` (no caches); nothing beside it."""
    repo = scratch / "repo"
    shutil.copytree(ROOT / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, repo / name)
    return repo


@pytest.mark.slow  # 100 s on 2 cores at load 6: transformer-math's claims in a fresh interpreter
def test_a_copy_outside_the_tree_gives_the_readmes_counts(tmp_path):
    repo = copy_of_the_repository(tmp_path)
    assert not (repo.parent / "shared").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["repo"]
    env = {k: v for k, v in os.environ.items() if k not in ("ATTNLAB_THESIS_MAPS", "ATTNLAB_PLUGINS", "PYTHONPATH")}
    env.update(PYTHONPATH=str(repo / "src"), ATTNLAB_PROGRESS="0")
    where = subprocess.run([sys.executable, "-c", "import attnlab; print(attnlab.__file__)"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=120, check=True).stdout.strip()
    assert Path(where) == repo / "src" / "attnlab" / "__init__.py"  # the copy runs, not the development tree
    p = subprocess.run([sys.executable, "-m", "attnlab", "verify", PAPER, "--json"], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = json.loads(p.stdout)
    assert rows and {r["paper"] for r in rows} == {PAPER}
    thesis = [r for r in rows if r["id"].startswith(f"{PAPER}.head-thesis-")]
    assert len(thesis) == 3 and not [r["id"] for r in thesis if r["verdict"] == "inconclusive"]
    assert "../shared" not in p.stdout + p.stderr
    # where the development tree gives these counts too, the README is stale: scripts/readme_tables.py --write
    assert counts(rows) == readme_counts(PAPER), "the copy's counts against the README's row"
