"""Every series of a line figure has its own look (colour and marker), and a crowded legend sits outside the axes."""

from __future__ import annotations

import pytest

from attnlab.reports.figures import LEGEND_INSIDE, MARKERS, series_style
from attnlab.results import PALETTE


def _drawn_axes(spec, folder):
    """Render ``spec`` and return the matplotlib axes it was drawn on (before the figure is closed)."""
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.reports import figures

    captured = {}
    original = figures._style_axes

    def spy(ax, s):
        original(ax, s)
        captured["ax"] = ax

    figures._style_axes = spy
    try:
        figures.render(spec, folder)
    finally:
        figures._style_axes = original
    return captured["ax"]


def test_fifty_six_series_look_different():
    looks = [series_style(i) for i in range(len(PALETTE) * len(MARKERS))]
    assert len(set(looks)) == 56
    assert series_style(0) == (PALETTE[0], MARKERS[0])


def test_a_crowded_legend_is_outside_the_data(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.bench.report import time_figure
    from attnlab.reports import figures

    names = [f"variant-{i}" for i in range(14)]
    rows = [{"variant": v, "n": n, "status": "ok", "time_ms": (i % 3 + 1) * n / 512.0,
             "order": "quadratic" if i < 6 else "linear"} for i, v in enumerate(names) for n in (512, 1024, 2048)]
    ax = _drawn_axes(time_figure(rows), tmp_path)
    legend = ax.get_legend()
    assert len(legend.get_texts()) == 14 > LEGEND_INSIDE
    fig = ax.figure
    fig.canvas.draw()
    box, axes = legend.get_window_extent(), ax.get_window_extent()
    assert box.x0 >= axes.x1  # entirely to the right of the plotting area
    lines = ax.get_lines()
    assert len({(l.get_color(), l.get_marker()) for l in lines}) == 14


def test_censored_points_are_drawn_as_bounds(tmp_path):
    """A value at the top of a search grid is an open marker with an arrow up, not a measured point."""
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.reports import figures
    from attnlab.results import line_figure, series

    spec = line_figure("t.png", "c", series=[series("T*", [1, 2, 4], [10, 20, 40], censored=[None, None, "lower"])],
                       xlabel="H", ylabel="T")
    ax = _drawn_axes(spec, tmp_path)
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == 1 and tuple(arrows[0].xy) == (4, 40)
    open_markers = [l for l in ax.get_lines() if l.get_markerfacecolor() == "white"]
    assert len(open_markers) == 1 and list(open_markers[0].get_xdata()) == [4]
    assert spec.to_dict()["series"][0]["censored"] == [None, None, "lower"]


def test_categorical_axis_and_points_only(tmp_path):
    """xticklabels put one label per category at x = 0, 1, ...; style "points" draws no line (configurations
    that share an x are not joined)."""
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.reports import figures
    from attnlab.results import line_figure, series

    spec = line_figure("c.png", "c", series=[series("a", [0, 1, 2], [1, 2, 3], style="points")], xlabel="case",
                       ylabel="y", xticklabels=["(2,4,4)", "(4,2,4)", "(3,3,4)"])
    ax = _drawn_axes(spec, tmp_path)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["(2,4,4)", "(4,2,4)", "(3,3,4)"]
    assert ax.get_lines()[0].get_linestyle() == "None"


def test_many_bins_do_not_overlap_their_labels(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.reports import figures
    from attnlab.results import bar_figure

    cats = [f"{0.05 * i:.2f}" for i in range(21)]
    spec = bar_figure("b.png", "c", categories=cats, groups=[{"label": "pairs", "values": list(range(21))}],
                      ylabel="pairs")
    ax = _drawn_axes(spec, tmp_path)
    ax.figure.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
    assert len(boxes) <= figures.MAX_BAR_LABELS
    assert all(a.x1 <= b.x0 + 1 for a, b in zip(boxes, boxes[1:]))  # left to right, no overlap


def test_one_group_of_bars_has_no_legend_and_two_groups_have_one(tmp_path):
    """A legend that names the only group repeats the axis label; with two groups it tells them apart."""
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.results import bar_figure

    one = bar_figure("one.png", "c", categories=["a", "b"], groups=[{"label": "heads", "values": [1, 2]}],
                     ylabel="heads")
    assert _drawn_axes(one, tmp_path).get_legend() is None
    two = bar_figure("two.png", "c", categories=["a", "b"], ylabel="heads",
                     groups=[{"label": "x", "values": [1, 2]}, {"label": "y", "values": [2, 1]}])
    assert [t.get_text() for t in _drawn_axes(two, tmp_path).get_legend().get_texts()] == ["x", "y"]


def test_every_text_of_a_line_figure_is_legible_half_a_row_wide(tmp_path):
    """Shown HALF_PX wide (two figures side by side in a 1000 px window), the smallest text of a line figure
    with a crowded legend and category labels is >= 9 CSS pixels: 10 pt at 110 dpi in a 704 px PNG."""
    from attnlab.reports import figures
    from attnlab.results import line_figure, series

    spec = line_figure("l.png", "c", xlabel="case", ylabel="y", xticklabels=["(2,4,4)", "(4,2,4)", "(3,3,4)"],
                       series=[series(f"variant-{i}", [0, 1, 2], [i, i + 1, i + 2]) for i in range(9)])
    out = figures.render(spec, tmp_path)
    assert out.size_px == (704, 440)
    assert out.text_px == pytest.approx(10 * 110 / 72, rel=1e-9)
    assert out.text_px * figures.HALF_PX / out.size_px[0] >= 9.0
    assert out.legible_width(9.0) == 415 <= figures.HALF_PX  # ceil(704 * 9 / 15.28)
