"""The transformer-math claims on positional encodings, the decoder and parameter counts."""

import pytest

from attnlab.analysis.parameters import table1_rows
from attnlab.registry import select_claims

IDS = [
    "transformer-math.pe-shift-linear",
    "transformer-math.decoder-causal",
    "transformer-math.param-count-formula",
    "transformer-math.table1-counts",
]


@pytest.fixture(scope="module")
def results():
    return {c.id: c.run(seed=0) for c in select_claims(IDS)}


def test_all_registered(results):
    assert sorted(results) == sorted(IDS)
    assert all(r.claim.where and r.claim.statement and r.claim.paper_value for r in results.values())


def test_pe_shift_linear(results):
    r = results["transformer-math.pe-shift-linear"]
    assert r.status == "pass", r.error
    m = r.measurement
    assert m.tolerance == 1e-9 and m.relation == "<="
    assert 0 < m.measured < 1e-11  # rounding of w_k t in float64, far below the tolerance
    assert "d in {16, 512}" in m.detail


def test_decoder_causal(results):
    r = results["transformer-math.decoder-causal"]
    assert r.status == "pass", r.error
    m = r.measurement
    assert m.measured == 0.0 and m.tolerance == 0.0 and m.relation == "=="
    least_past = float(m.detail.split("min over j <= i = ")[1].split()[0])
    assert least_past > 1e-6  # the Jacobian is not identically zero


def test_param_count_formula(results):
    r = results["transformer-math.param-count-formula"]
    assert r.status == "pass", r.error
    assert r.measurement.measured == 0 and r.measurement.tolerance == 0
    assert "over 32 modules" in r.measurement.detail


def test_table1_counts(results):
    r = results["transformer-math.table1-counts"]
    assert r.status == "pass", r.error
    m = r.measurement
    assert m.tolerance == 0.05
    assert m.measured == max(row["rel_error"] for row in table1_rows())
    assert m.measured == pytest.approx(1_557_611_200 / 1.5e9 - 1, rel=1e-12)  # GPT-2 XL is the loosest
    for model in ("GPT-1", "BERT", "GPT-2", "GPT-3", "LaMDA", "Minerva"):
        assert model + ": paper" in m.detail


def test_other_seed_still_passes():
    for c in select_claims(["transformer-math.pe-shift-linear", "transformer-math.decoder-causal"]):
        assert c.run(seed=3).status == "pass"
