"""Heatmap grids: spec validation, JSON round trip and the drawn PNG."""

from __future__ import annotations

import base64
import struct

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.reports.figures import render
from attnlab.results import ExperimentResult, heatmap_figure, heatmap_panel


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def _grid(n_layers=6, n_heads=12, n=20):
    g = torch.Generator().manual_seed(0)
    panels = [heatmap_panel(f"L{l} H{h}", torch.softmax(torch.randn(n, n, generator=g), -1))
              for l in range(n_layers) for h in range(n_heads)]
    return heatmap_figure("grid.png", "All heads.", panels=panels, ncols=n_heads, vmin=0.0, vmax=1.0,
                          colorbar="attention weight")


def test_round_trip_keeps_every_value():
    fig = _grid(2, 3, 5)
    back = ExperimentResult.from_dict(ExperimentResult(figures=[fig]).to_dict()).figures[0]
    assert back.to_dict() == fig.to_dict()
    assert len(back.panels) == 6 and back.ncols == 3
    # stored to 6 significant digits
    original = fig.panels[0].values[2][3]
    assert abs(back.panels[0].values[2][3] - original) <= 5e-6 * abs(original)  # half a unit in the 6th digit


def test_grid_of_72_heads_renders_at_a_readable_size(tmp_path):
    out = render(_grid(), tmp_path)
    w, h = _png_size(base64.b64decode(out.png_base64))
    # 12 panels of ~1.25 in at 110 dpi: at least ~130 px per panel across
    assert w >= 12 * 130 and h >= 6 * 130, (w, h)
    assert out.path.read_bytes() == base64.b64decode(out.png_base64)


def test_labelled_panel_is_large_enough_for_its_tokens(tmp_path):
    tokens = [f"tok{i}" for i in range(40)]
    fig = heatmap_figure("zoom.png", "One head.", ncols=1,
                         panels=[heatmap_panel("L0 H0", torch.eye(40), xlabels=tokens, ylabels=tokens)])
    w, h = _png_size(base64.b64decode(render(fig, tmp_path).png_base64))
    assert min(w, h) >= 40 * 0.16 * 110 * 0.9, (w, h)  # >= ~16 px per token row


@pytest.mark.parametrize("bad, message", [
    (dict(panels=[]), "at least one panel"),
    (dict(ncols=0), "ncols"),
    (dict(cmap="jet"), "cmap must be one of"),
])
def test_bad_specs_are_one_line_errors(bad, message):
    kw = dict(panels=[heatmap_panel("a", [[1.0]])], ncols=1) | bad
    with pytest.raises(ConfigError, match=message):
        heatmap_figure("x.png", "", **kw)


def test_bad_panels_are_one_line_errors():
    with pytest.raises(ConfigError, match="rectangular"):
        heatmap_panel("ragged", [[1.0, 2.0], [3.0]])
    with pytest.raises(ConfigError, match="2 x labels for 3 columns"):
        heatmap_panel("labels", [[1.0, 2.0, 3.0]], xlabels=["a", "b"])


def test_the_head_labels_of_a_12_x_6_grid_are_legible_one_row_wide(tmp_path):
    """The grid of 72 heads spans the report's row: shown ROW_PX wide (an 800 px window), its panel titles
    and colour bar ticks (7 pt, its smallest text) are >= 9 CSS pixels; long titles wrap at spaces."""
    from attnlab.reports.figures import LEGIBLE_PX, ROW_PX, spans_row

    spec = _grid()
    assert spans_row(spec.to_dict())
    out = render(spec, tmp_path)
    w, _ = out.size_px
    shown = out.text_px * ROW_PX / w
    assert 9.0 <= shown and shown == pytest.approx(LEGIBLE_PX, abs=0.6)  # as large as 12 panels allow
    long = heatmap_figure("t.png", "c", ncols=8, panels=[heatmap_panel(f"map {i}: syntactic, d 12.{i}", torch.eye(4))
                                                         for i in range(8)])
    out = render(long, tmp_path)
    assert out.text_px * ROW_PX / out.size_px[0] >= 9.0
