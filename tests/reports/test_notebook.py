"""A report in a notebook: build_report's Report (still a pair of paths), reproduce's RunPath and analyze's
Analysis show report.html in one sandboxed <iframe srcdoc=...> whose attribute, unescaped, is the page
byte for byte; a token "</script>" or a quote in the page cannot end the attribute; nothing is fetched."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np

from attnlab.commands.analyze import Analysis
from attnlab.commands.reproduce import RunPath
from attnlab.reports import Report, build_report
from attnlab.reports.notebook import FRAME_HEIGHT, embed_page, report_frame
from attnlab.reports.viewer import viewer_data
from attnlab.results import ExperimentResult
from attnlab.runs.rundir import RunDir

TOKENS = ["[CLS]", "</script>", "\"q\"", "it's", "&amp;", "</iframe>"]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(fragment: str) -> list[tuple[str, dict]]:
    p = _Tags()
    p.feed(fragment)
    p.close()
    return p.tags


def _run(tmp_path) -> Path:
    rd = RunDir.create(tmp_path / "run")
    rd.write_config({"papers": ["transformer-math"], "scale": "quick", "seed": 0, "device": "cpu"}, ["attnlab"])
    rd.write_env(seed=0, device="cpu")
    A = np.full((1, 2, 6, 6), 1 / 6)
    block = viewer_data(A, TOKENS, title='a "title" </script>', scores={"s'": np.array([[0.5, np.nan]])})
    rd.write_results({"experiments": {"transformer-math.x": {
        "id": "transformer-math.x", "description": "d", "status": "ok", "seconds": 1.0, "config": {},
        "results": ExperimentResult(notes=["</iframe> & \" '"], interactive=[block]).to_dict()}}})
    return rd.path


def _check_frame(fragment: str, page: str) -> None:
    tags = _tags(fragment)
    assert [t for t, _ in tags] == ["iframe"], tags  # the page stays inside the attribute
    attrs = tags[0][1]
    assert attrs["srcdoc"] == page and attrs["sandbox"] == "allow-scripts"
    assert f"height:{FRAME_HEIGHT}px" in attrs["style"]
    raw = fragment[fragment.index('srcdoc="') + 8:fragment.index('" title=')]
    assert not set(raw) & set("<>\"'")  # every such character is a reference
    assert "src=" not in fragment.replace("srcdoc=", "") and "http://" not in fragment and "https://" not in fragment


def test_build_report_returns_a_pair_of_paths_that_shows_the_report(tmp_path):
    path = _run(tmp_path)
    report = build_report(path)
    html_path, md_path = report  # still unpacks as before
    assert isinstance(report, tuple) and isinstance(report, Report) and len(report) == 2
    assert (html_path, md_path) == (path / "report.html", path / "report.md") == (report.html, report.markdown)
    page = html_path.read_text(encoding="utf-8")
    frame = report._repr_html_()
    _check_frame(frame, page)
    assert page.count('class="attnlab-viewer"') == 1 and "&lt;/iframe&gt; &amp; &quot;" in page  # the report


def test_reproduce_and_analyze_results_show_their_report(tmp_path):
    path = _run(tmp_path)
    build_report(path)
    page = (path / "report.html").read_text(encoding="utf-8")
    run = RunPath(path)
    assert isinstance(run, Path) and run == path and str(run) == str(path) and (run / "report.html").is_file()
    _check_frame(run._repr_html_(), page)
    assert (run / "figures")._repr_html_() is None  # a path without a report shows as a path
    _check_frame(Analysis(path, {})._repr_html_(), page)
    assert "No report at" in report_frame(tmp_path / "none" / "report.html")
    assert embed_page("<p title=\"x\">a & b</p>", height=300).startswith(
        '<iframe srcdoc="&lt;p title=&quot;x&quot;&gt;a &amp; b&lt;/p&gt;"')
