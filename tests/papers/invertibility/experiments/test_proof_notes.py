"""invertibility.proof-notes: one row per finding, with the numbers that check each step."""

from __future__ import annotations

from fractions import Fraction

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.experiments.proof_notes import (
    EXPERIMENT_ID,
    ProofNotesConfig,
    multinomial,
    run,
    taylor,
)
from attnlab.papers.invertibility.notes_errors import NOTES_ERRORS
from attnlab.registry import get_experiment


def test_registered():
    assert get_experiment(EXPERIMENT_ID).config_cls is ProofNotesConfig


def test_taylor_and_multinomial():
    t = taylor()
    assert t["note"] == pytest.approx(2.0, abs=1e-15) and t["target"] == pytest.approx(2 / 3, abs=1e-15)
    assert t["note_error"] == pytest.approx(4 / 3, abs=1e-15) and t["right_error"] <= 1e-50
    m = multinomial(3, 4)
    assert (m["monomials"], m["terms"], m["max_diff"]) == (15, 81, 0)
    assert Fraction(1, 2) ** 2 == Fraction(1, 4)  # exact rationals underneath


def test_proof_notes(storable):
    res = run(ProofNotesConfig(cases=("2:3:2", "2:4:4"), w_values=(0.1, 10.0)))
    storable(res)
    table = res.tables[0]
    assert len(table.rows) == len(NOTES_ERRORS)
    assert all(r[3] not in ("", "-") for r in table.rows)  # every step has a number
    assert all(c.status in ("pass", "info") for c in res.summary)
    w = {(x["N"], x["L"]): x["w_star"] for x in res.data["expansion"]}
    assert w[2, 3] == pytest.approx(4.649, abs=1e-3) and w[2, 4] == pytest.approx(5.345, abs=1e-3)
    limit = {(x["L"], x["w"]): x for x in res.data["limit"]}
    assert limit[4, 10.0]["log10_ratio"] < limit[4, 0.1]["log10_ratio"] - 20  # w -> oo worsens conditioning
    assert limit[4, 10.0]["cert_lower"] == 16


@pytest.mark.parametrize("changes, message", [
    (dict(cases=("2:9:9",)), "N\\^L = 512 > 256"),
    (dict(w_values=()), "at least one positive"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        ProofNotesConfig(**changes)
