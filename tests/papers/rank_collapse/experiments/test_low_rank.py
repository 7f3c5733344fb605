"""rank-collapse.low-rank at a tiny config (the spectrum statistics on known matrices: test_attention_spectrum.py)."""

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.rank_collapse.experiments.low_rank import LowRankConfig, run
from tolerances import FLOAT64


def test_low_rank_tiny(storable):
    res = run(LowRankConfig(n_values=(16, 32), texts=1, k_values=(2, 4, 8), draws=4, smollm2_n_values=()))
    storable(res)
    for r in res.data["rows"]:
        assert 1 <= r["k90"] <= r["k99"] <= r["n"] and r["k90_energy"] <= r["k90"]
        assert r["matrices"] == 72 and r["cumulative"][-1] == pytest.approx(1, abs=FLOAT64)
        assert r["projection_error"][-1] < r["projection_error"][0]
        assert all(s <= p + FLOAT64 for s, p in zip(r["svd_error"], r["projection_error"]))
    # the error shrinks with k' for every matrix (E ||P R^T R w - P w||^2 ~ 1/k'): a sanity row, not the
    # text's; the notes' statements here are judged by claims, so no row of this experiment is the text's
    shrinks = res.check("median Theorem 2.3 error")
    assert (shrinks.role, shrinks.verdict) == ("sanity", "sanity") and not shrinks.anchor
    assert {c.group for c in res.summary} <= {"sanity", "info"}
    assert res.deviations == []  # said, not left unsaid: the notes state no protocol for Theorem 2.3


@pytest.mark.parametrize("changes, message", [
    (dict(n_values=(16, 1024)), "n_values must be <= 512"),
    (dict(n_values=(16,), k_values=(32,)), "exceeds the smallest n"),
    (dict(eps=0.0), "eps must be"),
    (dict(smollm2_n_values=(64, 9000)), "smollm2_n_values must be <= 8192"),
    (dict(smollm2_layers=(0, 30)), "smollm2_layers must list layers 0-29"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        LowRankConfig(**changes)
