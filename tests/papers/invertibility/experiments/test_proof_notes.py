"""invertibility.proof-notes: the errata table, one measured row per record with its verdict, and the
numbers that check each step."""

from __future__ import annotations

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.errata import ERRATA
from attnlab.papers.invertibility.experiments.proof_notes import ProofNotesConfig, run


def test_proof_notes(storable):
    res = run(ProofNotesConfig(cases=("2:3:2", "2:4:4"), w_values=(0.1, 10.0)))
    storable(res)
    steps = res.tables[0]  # the errata table itself is the report's, from the registry (results.json "errata")
    assert len(steps.rows) == len(ERRATA)
    assert all(r[2] not in ("", "-") for r in steps.rows)  # every record has its number or its witness
    verdict = {e.id: r[3] for e, r in zip(ERRATA, steps.rows)}
    measured = {e.id: r[2] for e, r in zip(ERRATA, steps.rows)}
    # one record per error: the cap's row shows both claims that witness it (and names the experiment)
    assert verdict["invertibility.cap-below-n-to-the-l"] == "differs"
    assert "claim invertibility.positional-cap" in measured["invertibility.cap-below-n-to-the-l"]
    assert "claim invertibility.minimal-heads" in measured["invertibility.cap-below-n-to-the-l"]
    assert "experiment invertibility.conditioning" in measured["invertibility.cap-below-n-to-the-l"]
    assert verdict["invertibility.rows-span"] == "-" and measured["invertibility.rows-span"].startswith("on paper")
    assert verdict["invertibility.final-determinant"] == "differs"  # claim proof-steps
    assert verdict["invertibility.taylor-sign"] == verdict["invertibility.hyperplane-vt"] == "differs"
    assert verdict["invertibility.multinomial-notation"] == "sanity"
    taylor_row = res.check("the note's Taylor series")
    assert taylor_row.verdict == "differs" and taylor_row.anchor == "invertibility.proof-taylor"
    assert taylor_row.erratum == "invertibility.taylor-sign" and taylor_row.falsifier
    hyper = res.check("max_w |sum_t v_t^T f_t(w)|")
    assert hyper.verdict == "differs" and hyper.anchor == "invertibility.proof-hyperplane"
    assert hyper.erratum == "invertibility.hyperplane-vt" and hyper.falsifier
    assert res.check("max |count of ordered terms").anchor == ""  # a formula against itself: sanity
    assert res.verdicts["fail"] == 0 and res.verdicts["reproduced"] == 0  # the claims are counted by verify
    # beyond d = N + L - 2 the criterion 1 + P (N+L-2) >= N^L decides invertibility in every certified case
    crit = res.tables[1].rows
    assert len(crit) == 12 and all((r[8] == "yes") == (r[6] >= r[4]) and r[7] == min(r[4], r[6]) for r in crit)
    assert [2, 2, 3, 2, 4, 6, 5, 4, "yes"] in crit and [3, 2, 4, 3, 9, 12, 10, 9, "yes"] in crit
    assert [3, 3, 5, 6, 27, 30, 25, 25, "no"] in crit
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
