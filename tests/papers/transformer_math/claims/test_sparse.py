"""The sparse-attention claims (§2.1.1, eq. 11): gather = dense masked, two hops, the lost-mass bound."""

import pytest

from attnlab.registry import select_claims
from tolerances import FLOAT64

IDS = ["transformer-math.sparse-fast-path-exact", "transformer-math.sparse-two-hop",
       "transformer-math.sparse-lost-mass-bound"]


@pytest.fixture(scope="module")
def results():
    return {c.id: c.run(seed=0) for c in select_claims(IDS)}


def test_fast_path_exact(results):
    m = results["transformer-math.sparse-fast-path-exact"].check
    # two code paths of attnlab that agree for every input: sanity, unanchored (issue 33)
    assert m.verdict == "sanity" and m.role == "sanity" and not m.anchor
    assert m.values["max_error"] == m.measured <= FLOAT64
    assert m.values["n"] == 37


def test_two_hop(results):
    m = results["transformer-math.sparse-two-hop"].check
    assert m.verdict == "reproduced" and m.role == "text" and m.measured == 2.0
    assert m.anchor == "transformer-math.global-connects-pairs" and m.falsifier
    assert m.values["graphs"] == 54  # 3 n x 3 w x 3 draws x 2 families
    # without global tokens a w=3 window (one neighbour each side) needs n - 1 = 63 hops at n = 64
    assert m.values["window_only_max_hops"] == 63.0


def test_lost_mass_bound(results):
    m = results["transformer-math.sparse-lost-mass-bound"].check
    assert m.verdict == "sanity" and 0 < m.values["max_ratio_to_bound"] == m.measured <= 1.0
    assert 0 < m.values["max_lost_mass"] < 1


def test_sparse_claims_pass_through_the_cli(cli):
    import json

    code, out, err = cli(["verify", *IDS, "--json"])
    assert code == 0, err
    rows = {r["id"]: r for r in json.loads(out)}
    assert set(rows) == set(IDS)
    assert [rows[i]["verdict"] for i in IDS] == ["sanity", "reproduced", "sanity"]
    assert [rows[i]["anchor"] for i in IDS] == ["", "transformer-math.global-connects-pairs", ""]
    assert rows[IDS[0]]["measured"] <= FLOAT64
    assert rows[IDS[1]]["measured"] == 2.0  # a global token makes 2 hops necessary and enough
    assert rows[IDS[1]]["values"]["max_hops"] == 2.0
    assert 0 < rows[IDS[2]]["measured"] <= 1.0
