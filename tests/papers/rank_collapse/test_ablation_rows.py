"""The helpers of rank-collapse.ablations' rows and its figures and tables on made-up curves (the rows
themselves: experiments/test_bert_base.py, experiments/test_ablations.py)."""

import pytest

from attnlab.checks import Bound, compare
from attnlab.papers.rank_collapse import dong_figures
from attnlab.papers.rank_collapse.ablation_curves import Curve, LayerCurves, Measured
from attnlab.papers.rank_collapse.ablation_figures import ablation_figures, ablation_tables
from attnlab.papers.rank_collapse.ablation_rows import (FIGURE_TOL, REFERENCE, ablation_summary, at_depth, controlled,
                                                        draw_value, first_below, fmt, layers_text, overflow_text)
from attnlab.papers.rank_collapse.stacks import DONG_VARIANTS, VARIANTS


def test_formatting_and_depth_helpers():
    assert fmt(2.5e-5) == "2.5e-05" and fmt(0.12345) == "0.123" and layers_text([0.5, 1e-9]) == "0.500, 1e-09"
    assert first_below([0.5, 0.2, 0.001, 0.0], 0.01) == 2 and first_below([0.5], 0.01) is None
    ys = [0.0, 0.1, 0.2, 0.3]
    assert at_depth(ys, 0.5, 6) == 0.3 and at_depth(ys, 1.0, 6) is None  # layer 6 not run
    c = Curve([0.5], [0.0])
    assert overflow_text(LayerCurves(c, c, c, None)) == ""
    assert "overflow from layer 3" in overflow_text(LayerCurves(c, c, c, 3))


def test_draw_value_is_a_bound_only_where_the_text_count_cannot_decide():
    ref = 0.5
    assert draw_value(0.51, 0.01, dong_figures.SEQUENCES, ref) == 0.51  # Dong et al.'s 32 texts: the mean
    assert draw_value(0.51, 0.001, 8, ref) == 0.51  # well inside ref ± FIGURE_TOL
    b = draw_value(ref + FIGURE_TOL, 0.02, 8, ref)  # on the edge: ± 2 standard errors straddle it
    assert isinstance(b, Bound) and b.lower == pytest.approx(ref + FIGURE_TOL - 2 * 0.02 / 8**0.5)


def test_controlled_keeps_a_verdict_only_where_the_control_agrees():
    main = compare("q", 0.5, "±", 0.5, tolerance=0.05, role="own")
    same = controlled(main, compare("q", 0.52, "±", 0.5, tolerance=0.05, role="own"))
    assert same.verdict == main.verdict and same.control.startswith("the same row on random token ids")
    other = controlled(main, compare("q", 0.9, "±", 0.5, tolerance=0.05, role="own"))
    assert other.verdict == "inconclusive" and "the input decides it" in other.cannot_decide


def _measured() -> Measured:
    def curves(last: float) -> LayerCurves:
        c = Curve([0.6, 0.3, 0.2, 0.1, 0.05, 0.02, last], [0.0] * 7)
        return LayerCurves(c, c, c, None)

    ends = {"SAN": 1e-12, "SAN+skip": 0.3, "SAN+MLP": 1e-9, "SAN+LN": 1e-12, "transformer": 0.4}
    return Measured(curves={"pretrained": {v: curves(ends[v]) for v in VARIANTS}},
                    dong={"pretrained": {v: curves(ends[v]) for v in DONG_VARIANTS}}, composite={},
                    composite_minus_mean=0.0, dong_san_vs_san_ln=0.0, texts=2, tokens=8, skipped={},
                    smollm2_texts=1, smollm2_tokens=8, smollm2_layers=2)


def test_summary_figures_and_tables_of_made_up_curves():
    data = _measured()
    rows = ablation_summary(data)
    assert rows[0].quantity.startswith("pure attention loses rank") and rows[0].verdict == "reproduced"
    assert {c.verdict for c in rows if c.role == "sanity"} == {"sanity"}
    tables = ablation_tables(data)
    assert [t.title.split(" ")[0] for t in tables] == ["Dong", "Relative"]
    assert len(tables[0].rows) == len(REFERENCE)
    figs = ablation_figures(data, composite_texts=0, composite_tokens=4)
    assert figs[0].file == "ablation-linear-scale.png"
    assert {f.file for f in figs} >= {"ablation-pretrained-mean.png", "ablation-pretrained-svd.png"}
