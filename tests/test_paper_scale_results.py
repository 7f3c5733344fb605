"""The runs at the texts' sizes committed under results/paper-scale/: complete, at the paper scale,
rebuildable from their stored results, and the logic run within its hour on 2 cores."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from attnlab.reports import build_report
from attnlab.reports.format import outline
from attnlab.runs.rundir import load_run

ROOT = Path(__file__).resolve().parents[1]
PAPER_SCALE = ROOT / "results" / "paper-scale"
RUNS = sorted(d for d in PAPER_SCALE.glob("*") if d.is_dir())


def test_there_are_runs_and_a_readme_naming_each():
    assert {"logic", "memorization"} <= {d.name for d in RUNS}
    readme = (PAPER_SCALE / "README.md").read_text()
    for d in RUNS:
        assert f"`{d.name}/`" in readme, d.name


@pytest.mark.parametrize("run", RUNS, ids=[d.name for d in RUNS])
def test_each_run_is_complete_and_at_the_paper_scale(run):
    config = json.loads((run / "config.json").read_text())
    results = json.loads((run / "results.json").read_text())
    assert config["scale"] == "paper"
    assert results["experiments"] and all(e["status"] == "ok" for e in results["experiments"].values())
    md = (run / "report.md").read_text()
    for figure in re.findall(r"\]\((figures/[^)]+)\)", md):
        assert (run / figure).is_file(), figure
    assert (run / "report.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("run", RUNS, ids=[d.name for d in RUNS])
def test_the_report_rebuilds_from_the_stored_results_with_the_same_verdicts(run, tmp_path):
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    before = outline(load_run(run)).verdict_counts()
    build_report(copy)
    assert outline(load_run(copy)).verdict_counts() == before
    line = next(x for x in (copy / "report.md").read_text().splitlines() if x.startswith("**") and "reproduced" in x)
    assert line in (run / "report.md").read_text()


def test_the_logic_run_is_at_the_texts_size_with_its_architecture_and_states_its_time():
    """The run at N = 10, M = 50, batch 1000 with system 2's full B; its wall time (on a shared machine)
    is the one the folder's README states, beside the dry run's estimate for the idle machine."""
    results = json.loads((PAPER_SCALE / "logic" / "results.json").read_text())
    exp = results["experiments"]["logic.learning"]
    cfg = exp["config"]
    assert (cfg["N"], cfg["M"], cfg["batch"], cfg["system2_B"]) == (10, 50, 1000, "full")
    assert f"the experiment {round(exp['seconds'], -1):.0f} s" in (PAPER_SCALE / "README.md").read_text()
