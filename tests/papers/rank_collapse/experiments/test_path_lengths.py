"""rank-collapse.path-lengths at a tiny config: exact shares, counts, the linearised MiniLM (the measurements
themselves: test_path_shares.py)."""


import pytest

from attnlab.errors import ConfigError
from attnlab.papers.rank_collapse.experiments.path_lengths import PathLengthsConfig, run
from tolerances import FLOAT64, FLOAT64_LONG


def test_path_lengths_tiny(storable):
    res = run(PathLengthsConfig(stacks=("2:2", "3:2"), texts=1, tokens=12, path_samples=4))
    storable(res)
    for s in res.data["stacks"]:
        assert abs(sum(s["signed_share"]) - 1) <= FLOAT64  # the decomposition is exact
        assert sum(s["norm_share"]) == pytest.approx(1, abs=FLOAT64)
        assert s["recursion_vs_enumeration"] <= FLOAT64 and s["sum_vs_output"] <= FLOAT64
    m = res.data["minilm"]
    assert m["linear_vs_paths"] <= FLOAT64_LONG
    assert abs(sum(m["signed_share"]) - 1) <= FLOAT64_LONG
    mean_norm = sum(k * x for k, x in enumerate(m["norm_share"]))
    assert mean_norm < 6 * 12 / 13  # the output rides on shorter paths than the typical path
    assert m["products"][6]["median"] < m["products"][1]["median"]
    verdicts = {c.quantity: c.verdict for c in res.summary}
    # Dong et al.'s figures (0.38; path products shrinking with depth), not printed by the notes: attnlab's own
    assert verdicts["BERT-base (L=H=12): share of paths of length 12"] == "holds"
    # MiniLM's path products stand for Dong et al.'s BERT-base (another model, other text): the row holds only
    # because its control, BERT-base at random init on the text and on random token ids, holds too
    products = res.check("MiniLM path products")
    assert products.verdict == "holds" and products.deviations == ("minilm-for-bert", "pydoc-text")
    assert products.control.startswith("BERT-base at random init") and "not offline" in products.control
    bert = res.data["bert_base_products"]
    assert set(bert) == {"text", "random ids"} and all(len(v) == 12 and v[12]["median"] < v[1]["median"]
                                                       for v in bert.values())
    assert [d.id for d in res.deviations] == ["minilm-for-bert", "pydoc-text", "linearised"]
    exact = res.check("max |sum_k S_k + 1 b^T - SAN_skip(X)|")  # the notes' (H+1)^L paths with skips
    assert (exact.verdict, exact.anchor) == ("reproduced", "rank-collapse.skip-paths") and exact.falsifier
    assert res.check("max |S_k by recursion").verdict == "sanity"
    assert [c.quantity for c in res.summary if c.group == "text"] == [exact.quantity]


@pytest.mark.parametrize("changes, message", [
    (dict(stacks=("3x2",)), "stacks entries must be 'L:H'"),
    (dict(stacks=("9:4",)), "paths to enumerate"),
    (dict(stacks=()), "at least one"),
    (dict(path_samples=0), "path_samples must be"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        PathLengthsConfig(**changes)
