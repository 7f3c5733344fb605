"""report.html renders in headless Chromium to a page that is not blank.

Skips only where /usr/bin/chromium is absent and CI is not set; in CI (where
.ci/run installs Chromium) a missing browser is a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attnlab.checks import near
from attnlab.reports import build_report
from attnlab.results import line_figure, series
from attnlab.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "screenshot_report.py"
CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.browser


def _require_chromium():
    if CHROMIUM.exists():
        return
    if os.environ.get("CI"):
        pytest.fail("CI is set but /usr/bin/chromium is missing: .ci/run should have installed it")
    pytest.skip("/usr/bin/chromium is not installed (apt-get install chromium)")


def test_screenshot_of_report_is_not_blank(tmp_path):
    _require_chromium()
    rd = RunDir.create(tmp_path / "run")
    rd.write_config({"papers": ["transformer-math"], "scale": "quick", "seed": 0, "device": "cpu"}, ["attnlab"])
    rd.write_env(seed=0, device="cpu")
    fig = line_figure("f.png", "caption", xlabel="t", ylabel="y", xscale="log", yscale="log", title="F",
                      series=[series("n=3", [0.1, 1, 10], [0.5, 0.3, 0.01])])
    toy = dict(anchor="transformer-math.toy", falsifier="a value off the paper's", erratum="none")
    summary = [near(1.0, 1, 0.01, quantity="q", paper_value="1", **toy).to_dict(),
               near(3.0, 2, 0.01, quantity="r", paper_value="2", **toy).to_dict()]
    rd.write_results({"experiments": {"transformer-math.x": {
        "id": "transformer-math.x", "description": "d", "status": "ok", "seconds": 1.0, "config": {},
        "results": {"summary": summary, "figures": [fig]}}}})
    html, _ = build_report(rd.path)
    png = tmp_path / "shot.png"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(html), str(png), "--height", "1400"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert png.stat().st_size > 20_000
    import matplotlib.image as mpimg

    img = mpimg.imread(png)  # (H, W, 3 or 4) floats in [0, 1]
    assert img.shape[:2] == (1400, 1280)
    rgb = np.round(img[..., :3] * 255).astype(np.int64)
    colours = np.unique(rgb[..., 0] * 65536 + rgb[..., 1] * 256 + rgb[..., 2])
    assert colours.size > 200  # text, header band, status pills, anti-aliased figure lines
    # the dark header band is drawn: a blank or unstyled page has no dark rows at the top
    assert rgb[:60].mean() < 120


def test_screenshot_script_reports_a_missing_file(tmp_path):
    _require_chromium()
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none.html"), str(tmp_path / "x.png")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "does not exist" in proc.stderr
