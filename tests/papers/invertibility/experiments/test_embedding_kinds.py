"""invertibility.embedding-kinds at a tiny config: certified full rank for every embedding and W_QK
kind, the trained tables' worse conditioning with E_11, determinism, bad configs."""

from __future__ import annotations

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.experiments.embedding_kinds import EMBEDDINGS, QK_KINDS, EmbeddingKindsConfig, run

TINY = dict(cases=("2:3:2", "2:4:4"), w_values=(1.0,), hp_max_rows=16, certify_max_rows=16)


@pytest.fixture(scope="module")
def result():
    return run(EmbeddingKindsConfig(**TINY))


def test_every_kind(result, storable):
    storable(result)
    rows = result.data["rows"]
    assert len(rows) == 2 * len(EMBEDDINGS) * len(QK_KINDS)
    for r in rows:
        assert r["cert_lower"] == r["rows"]  # generic: full rank for all six kinds
        assert r["log10_ratio"] is not None and r["log10_ratio"] < 0
    by = {(r["N"], r["L"], r["embedding"], r["qk"]): r for r in rows}
    # MiniLM's tokens share almost the same first coordinate: E_11 sees little of them
    assert by[2, 4, "trained", "E11"]["log10_ratio"] < by[2, 4, "trained", "gaussian"]["log10_ratio"] - 10
    assert by[2, 4, "explicit", "E11"]["log10_ratio"] == pytest.approx(-6.337, abs=2e-3)
    for emb in ("explicit", "random"):  # the proof's setting: Theorem 1 judged
        c = result.check(f"certified rank N^L, {emb} embeddings, W_QK E11")
        assert c.verdict == "reproduced" and c.role == "text" and c.measured == c.threshold == 2
        assert c.anchor == "invertibility.theorem-1" and c.falsifier and c.erratum == ""
    for name in ("trained embeddings, W_QK E11", "explicit embeddings, W_QK gaussian"):  # outside it: described
        c = result.check(f"certified rank N^L, {name}")
        assert c.verdict == "info" and c.measured == "2 of 2"


def test_deterministic(result):
    again = run(EmbeddingKindsConfig(**TINY))
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(again.data["rows"]) == strip(result.data["rows"])


@pytest.mark.parametrize("changes, message", [
    (dict(cases=("17:2:2",)), "exceeds the 16 trained token embeddings"),
    (dict(restrict="pca"), "restrict must be one of"),
    (dict(w_values=(-1.0,)), "every entry of w_values must be"),
    (dict(certify_max_rows=-1), "certify_max_rows must be"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        EmbeddingKindsConfig(**changes)


def test_a_capped_case_is_decided_not_censored():
    # (2, 3, 4) at P = ceil(8/4) = 2: rank <= 1 + 2 * 3 = 7 < 8 for every embedding: Theorem 1 differs there
    res = run(EmbeddingKindsConfig(cases=("2:3:4", "2:3:2"), w_values=(1.0,), hp_max_rows=16, certify_max_rows=16))
    c = res.check("certified rank N^L, explicit embeddings, W_QK E11")
    assert c.verdict == "differs" and (c.measured, c.threshold) == (1, 2)
    assert c.erratum == "invertibility.cap-below-n-to-the-l"  # the missed case is capped: the cap's one record
    assert {r["cert_lower"] for r in res.data["rows"] if r["d"] == 4} == {7}
    # the miss is the cap's, for every choice: the departures from the proof's setting do not touch the row
    assert c.deviations == () and {d.id for d in res.deviations} == {"finite-w", "float64-values"}


def test_a_miss_the_cap_allows_decides_nothing_about_an_existence_theorem():
    """Theorem 1 says some W_QK, e and pos make A invertible: one choice (finite w, float64 values) that
    misses N^L where the cap allows it does not refute it; the row is inconclusive, naming the deviations."""
    from attnlab.checks import equals
    from attnlab.papers.invertibility.experiments._common import touched_by

    assert touched_by(False) == ()
    row = equals(6, 7, anchor="invertibility.theorem-1", falsifier="a case below N^L", erratum="none",
                 deviations=touched_by(True))
    assert row.verdict == "inconclusive" and row.outcome is False
    assert row.reason == "deviations from the text's protocol (finite-w, float64-values) and no control run without them"
