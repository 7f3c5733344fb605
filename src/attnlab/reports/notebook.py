"""A report in a notebook: the self-contained report.html inside an ``<iframe srcdoc=...>``.

The page is put whole into the iframe's ``srcdoc`` attribute, escaped with ``html.escape(page,
quote=True)`` (& < > " ' as character references), so no character of the page can end the
attribute or the element: a token "</script>" or a quote in a report stays text. The frame is
sandboxed with scripts allowed (``sandbox="allow-scripts"``): the attention viewers of the page
run, and the page cannot reach the notebook around it. Nothing is loaded from anywhere; the
frame is as wide as the output cell and :data:`FRAME_HEIGHT` pixels high (the page scrolls
inside it).

What shows a report this way: :class:`attnlab.reports.Report` (what
:func:`attnlab.reports.build_report` returns), the run directory path that
:func:`attnlab.commands.reproduce.reproduce` returns and the :class:`attnlab.commands.analyze.Analysis`
of :func:`attnlab.commands.analyze.analyze`.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

FRAME_HEIGHT = 760  # pixels: a report's header, summary and first figures


def embed_page(page: str, *, title: str = "attnlab report", height: int = FRAME_HEIGHT) -> str:
    """The complete HTML page ``page`` as one ``<iframe srcdoc="...">`` element (module docstring)."""
    return (f'<iframe srcdoc="{escape(page, quote=True)}" title="{escape(title, quote=True)}" '
            f'sandbox="allow-scripts" style="width:100%;height:{int(height)}px;border:1px solid #e3e7ed;'
            f'border-radius:8px;background:#fff"></iframe>')


def report_frame(html_path: str | os.PathLike, *, height: int = FRAME_HEIGHT) -> str:
    """``html_path`` (a report.html) embedded by :func:`embed_page`; a line saying so where the file is missing."""
    path = Path(html_path)
    if not path.is_file():
        return f"<p>No report at <code>{escape(str(path))}</code>: build it with <code>attnlab report</code>.</p>"
    return embed_page(path.read_text(encoding="utf-8"), title=f"attnlab report: {path.parent.name}", height=height)
