"""logic.learning's deviations from the text's protocol, and which summary rows each touches."""

from attnlab.papers.logic.experiments.learning import LearningConfig
from attnlab.papers.logic.learning_rows import deviations, row_deviations


def test_deviations_from_the_texts_protocol():
    """The paper preset runs the text's protocol but for system 3's diagonal B, which no row reads; the quick preset
    is a reduced problem that touches every §4.2 row; system 2's diagonal B (attnlab's default before issue 34)
    is a named variant touching the Fig. 1 row only, with its control."""
    paper = deviations(LearningConfig(scale="paper"))
    assert [d.id for d in paper] == ["system3-diagonal-b"] and row_deviations(paper, fig1=True) == ()
    quick = deviations(LearningConfig())
    assert [d.id for d in quick] == ["system3-diagonal-b", "reduced-size"]
    assert quick[1].kind == "size" and quick[1].control == "--scale paper" and "N = 5, M = 12, batch 200" in quick[1].what
    diag = deviations(LearningConfig(scale="paper", system2_B="diagonal"))
    assert [d.id for d in diag] == ["system3-diagonal-b", "diagonal-b"] and diag[1].kind == "architecture"
    assert diag[1].control == "--set system2_B=full" and "compatible architecture" in diag[1].what
    assert row_deviations(diag) == () and row_deviations(diag, fig1=True) == ("diagonal-b",)
    assert [d.id for d in deviations(LearningConfig(scale="paper", norm="none", inner_iterations=1))] == [
        "system3-diagonal-b", "no-layernorm", "step-budget"]
    assert LearningConfig().system2_B == "full" and LearningConfig(scale="paper").system2_B == "full"
    f64 = deviations(LearningConfig(scale="paper", dtype="float64"))
    assert [d.id for d in f64] == ["system3-diagonal-b", "float64"] and f64[1].control == "--set dtype=float32"
    assert row_deviations(f64) == ("float64",) == row_deviations(f64, fig1=True)
