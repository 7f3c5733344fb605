"""Every part of a stored result reads back typed: ``from_dict`` is the exact inverse of ``to_dict`` for
tables, series and each figure kind (for all inputs: hypothesis), and for every result the stored runs
hold (tests/fixtures/reports, results/)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.errors import ConfigError
from attnlab.results import (HEATMAP_CMAPS, LINE_STYLES, PALETTE, BarFigure, ExperimentResult, HeatmapFigure,
                             HeatmapPanel, LineFigure, Series, Table, figure_from_dict)

ROOT = Path(__file__).resolve().parents[1]

# stored values: heatmap values are kept to 6 significant digits, so draw them that way
NUMBER = st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda v: float(f"{v:.6g}"))
TEXT = st.text(alphabet="abc xyz-·≤0123", max_size=8)
FILE = st.from_regex(r"[a-z][a-z0-9_-]{0,8}\.png", fullmatch=True)


@st.composite
def series(draw: st.DrawFn) -> Series:
    n = draw(st.integers(0, 5))
    censored = draw(st.one_of(st.none(), st.lists(st.sampled_from([None, "lower", "upper"]), min_size=n, max_size=n)
                              .filter(any)))
    return Series(draw(TEXT), draw(st.lists(NUMBER, min_size=n, max_size=n)),
                  draw(st.lists(st.one_of(st.none(), NUMBER), min_size=n, max_size=n)),
                  draw(st.sampled_from(LINE_STYLES)), draw(st.booleans()),
                  draw(st.one_of(st.none(), st.sampled_from(PALETTE))), censored)


@st.composite
def line_figures(draw: st.DrawFn) -> LineFigure:
    return LineFigure(draw(FILE), draw(TEXT), draw(st.lists(series(), max_size=3)), draw(TEXT), draw(TEXT),
                      draw(TEXT), draw(st.sampled_from(["linear", "log"])), draw(st.sampled_from(["linear", "log"])),
                      draw(st.one_of(st.none(), st.lists(TEXT, max_size=4))))


@st.composite
def bar_figures(draw: st.DrawFn) -> BarFigure:
    cats = draw(st.lists(TEXT, max_size=4))
    groups = draw(st.lists(st.fixed_dictionaries({"label": TEXT, "values": st.lists(
        st.one_of(st.none(), NUMBER), min_size=len(cats), max_size=len(cats))}), max_size=3))
    return BarFigure(draw(FILE), draw(TEXT), cats, groups, draw(TEXT), draw(TEXT), draw(st.sampled_from(["linear", "log"])))


@st.composite
def panels(draw: st.DrawFn) -> HeatmapPanel:
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    labels = lambda k: st.one_of(st.none(), st.lists(TEXT, min_size=k, max_size=k))  # noqa: E731
    return HeatmapPanel(draw(TEXT), draw(st.lists(st.lists(NUMBER, min_size=cols, max_size=cols), min_size=rows,
                                                  max_size=rows)), draw(labels(cols)), draw(labels(rows)))


@st.composite
def heatmap_figures(draw: st.DrawFn) -> HeatmapFigure:
    return HeatmapFigure(draw(FILE), draw(TEXT), draw(st.lists(panels(), min_size=1, max_size=3)),
                         draw(st.integers(1, 4)), draw(TEXT), draw(st.sampled_from(HEATMAP_CMAPS)),
                         draw(st.one_of(st.none(), NUMBER)), draw(st.one_of(st.none(), NUMBER)), draw(TEXT),
                         draw(TEXT), draw(TEXT))


@st.composite
def tables(draw: st.DrawFn) -> Table:
    width = draw(st.integers(1, 4))
    cell = st.one_of(st.none(), st.booleans(), st.integers(-10**9, 10**9), NUMBER, TEXT)
    return Table(draw(TEXT), draw(st.lists(TEXT, min_size=width, max_size=width)),
                 draw(st.lists(st.lists(cell, min_size=width, max_size=width), max_size=4)),
                 draw(st.one_of(st.none(), st.lists(st.sampled_from(["text", "count", "percent", "float", "int"]),
                                                    min_size=width, max_size=width))))


@settings(max_examples=60, deadline=None)
@given(st.one_of(line_figures(), bar_figures(), heatmap_figures()))
def test_every_figure_kind_reads_back_equal(fig):
    stored = fig.to_dict()
    back = type(fig).from_dict(stored)
    assert back == fig and type(back) is type(fig)
    assert figure_from_dict(stored) == fig  # by its kind
    assert back.to_dict() == stored
    assert json.loads(json.dumps(stored)) == stored  # what results.json holds is what was read back


@settings(max_examples=60, deadline=None)
@given(series())
def test_a_series_reads_back_equal(s):
    assert Series.from_dict(s.to_dict()) == s


@settings(max_examples=60, deadline=None)
@given(tables())
def test_a_table_reads_back_equal(t):
    assert Table.from_dict(t.to_dict()) == t


def test_a_spec_without_a_kind_is_a_line_figure_and_an_unknown_kind_is_refused():
    spec = {"file": "a.png", "series": [{"label": "s", "x": [1, 2], "y": [3, None]}], "xlabel": "n"}
    fig = figure_from_dict(spec)
    assert isinstance(fig, LineFigure) and fig.series[0].y == [3, None] and fig.series[0].style == "solid"
    with pytest.raises(ConfigError, match="unknown kind 'pie'"):
        figure_from_dict({**spec, "kind": "pie"})


def test_categorical_axes_survive_the_round_trip():
    """A line figure's xticklabels come back (a result read back and stored again is unchanged)."""
    fig = LineFigure("c.png", "c", [Series("a", [0, 1], [1.0, 2.0])], "case", "y", xticklabels=["(2,4)", "(4,2)"])
    back = ExperimentResult.from_dict(ExperimentResult(figures=[fig]).to_dict())
    assert back.figures == [fig] and back.figures[0].xticklabels == ["(2,4)", "(4,2)"]


def _stored_results() -> list[tuple[str, dict]]:
    out = []
    for path in sorted((ROOT / "tests" / "fixtures" / "reports").glob("*.json.gz")):
        results = json.loads(gzip.decompress(path.read_bytes()))["results.json"]
        out += [(f"{path.name}:{i}", e["results"]) for i, e in results["experiments"].items() if "results" in e]
    for path in sorted((ROOT / "results").glob("*/*/results.json")):
        results = json.loads(path.read_text())
        out += [(f"{path.parent.name}:{i}", e["results"]) for i, e in results["experiments"].items()
                if "results" in e]
    return out


def test_every_stored_result_reads_back_and_stores_unchanged():
    stored = _stored_results()
    assert len(stored) >= 38  # the five papers' quick runs and the runs of results/
    kinds: dict[type, int] = {}
    for name, d in stored:
        r = ExperimentResult.from_dict(d)
        assert r.to_dict() == d, name
        for f in r.figures:
            kinds[type(f)] = kinds.get(type(f), 0) + 1
    assert kinds[LineFigure] >= 90 and kinds[BarFigure] >= 15 and kinds[HeatmapFigure] >= 10  # 98, 18, 14 stored
