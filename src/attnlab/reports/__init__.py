"""Reports: read run directories, write figures, HTML and Markdown.

Reports never compute maths: :func:`build_report` reads ``config.json``,
``env.json`` and ``results.json`` of a run directory, draws the figure specs
stored there (:mod:`attnlab.reports.figures`) and writes ``report.html``
(self-contained) and ``report.md``. So ``attnlab report RUN_DIR`` can always
rebuild a report from stored results.

What an experiment stores and a report shows is an
:class:`attnlab.results.ExperimentResult` as JSON (summary checks, tables, figure
specs, notes, raw data), read back typed once (:mod:`attnlab.reports.stored_run`) and then
by attribute; a stored result without summary, tables or figures is shown as JSON.

:class:`AttentionView` (:mod:`attnlab.reports.viewer`) shows attention maps in an offline,
interactive viewer: in Jupyter, as a standalone page (``save``), or in report.html where a
result carries an interactive block.

In Jupyter, what :func:`build_report` returns (a :class:`Report`) shows the report itself
(:mod:`attnlab.reports.notebook`), as do the results of :func:`attnlab.commands.reproduce.reproduce`
and :func:`attnlab.commands.analyze.analyze`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from attnlab.errors import RunDirError
from attnlab.reports.notebook import report_frame
from attnlab.reports.viewer import AttentionView, attention_viewer_html  # noqa: F401
from attnlab.runs.rundir import REPORT_HTML, REPORT_MD, RESULTS, RunDir, StoredRun, load_run  # noqa: F401


class Report(NamedTuple):
    """What :func:`build_report` returns: the paths of report.html and report.md, a pair as before
    (``html_path, md_path = build_report(run)``). In Jupyter it shows report.html itself, in an
    ``<iframe srcdoc=...>`` (:mod:`attnlab.reports.notebook`)."""

    html: Path
    markdown: Path

    def _repr_html_(self) -> str:
        return report_frame(self.html)


def build_report(run_dir: str | os.PathLike) -> Report:
    """(Re)write report.html and report.md of ``run_dir`` from its stored results; their paths as a
    :class:`Report`."""
    from attnlab.reports.figures import render
    from attnlab.reports.format import outline
    from attnlab.reports.html import render_html
    from attnlab.reports.markdown import render_markdown

    run = load_run(run_dir)
    if not (run.path / RESULTS).is_file():  # an empty report must never replace a good one
        raise RunDirError(f"{run.path} has no {RESULTS}: nothing to report, and its reports are left as they are; "
                          f"finish the run with `attnlab reproduce PAPER --out {run.path} --resume`")
    o = outline(run)
    figures, used = {}, set()
    for e in o.experiments:
        for spec in e.result.figures if e.result is not None else []:
            # two experiments may pick the same file name: the later one gets its id prefixed
            name = spec.file if spec.file not in used else f"{e.id}.{spec.file}"
            used.add(name)
            figures[(e.id, spec.file)] = render(spec, run.run_dir.figures_dir, name=name)
    html_path = run.run_dir.write_text(REPORT_HTML, render_html(o, figures))
    md_path = run.run_dir.write_text(
        REPORT_MD, render_markdown(o, {k: f"figures/{f.path.name}" for k, f in figures.items()})
    )
    return Report(html_path, md_path)
