"""The thesis's own eight maps (§3.1, §3.1.2): exact distances beside the thesis's 15.7-21.1, "most heads
diagonal" and "full rank", judged like for like; inconclusive, with the path, when the file is absent."""

import pytest

from attnlab.analysis.heads.projection import band_mask
from attnlab.papers.transformer_math import thesis_maps
from attnlab.registry import select_claims

IDS = ["transformer-math.head-thesis-distances", "transformer-math.head-thesis-most-diagonal",
       "transformer-math.head-thesis-full-rank"]
needs_maps = pytest.mark.skipif(not thesis_maps.thesis_maps_path().is_file(),
                                reason=f"the thesis's maps are not at {thesis_maps.thesis_maps_path()} "
                                       "(../shared/data beside the checkout)")


@pytest.fixture(scope="module")
def results():
    return {c.id: c.run(seed=0) for c in select_claims(IDS)}


@needs_maps
def test_exact_distances_beside_the_thesis_range(results):
    """The exact minimum on the crops the thesis fitted lies below its random search on 6 of 8 maps."""
    r = results[IDS[0]]
    m = r.check
    # the 15.7-21.1 is printed in the thesis's notebook, not in the text: attnlab's own comparison (issue 33)
    assert m.verdict == "inconclusive" and m.role == "own" and not m.anchor and not r.claim.anchor
    assert (m.relation, m.threshold) == ("==", 8)
    assert "random search over a wider family" in m.cannot_decide  # beside the thesis's numbers, not judged
    exact = m.values["exact"]
    assert len(exact) == 8 and m.measured == m.values["inside"] == 2
    assert min(exact) == pytest.approx(12.41, abs=0.01) and max(exact) == pytest.approx(19.83, abs=0.01)
    assert all(x < 21.1 for x in exact)  # never above the thesis's largest random-search distance
    assert m.paper_value.startswith("15.7-21.1") and "validation table" in m.where and "not in the text" in m.where


@needs_maps
def test_no_thesis_head_is_diagonal(results):
    m = results[IDS[1]].check
    assert m.verdict == "differs" and m.measured == 0.0 and (m.relation, m.threshold) == (">", 0.5)
    assert m.anchor == "transformer-math.most-heads-diagonal" == m.erratum and m.falsifier
    assert "positional" not in m.values["labels"]
    assert min(m.values["sigma1_normalized"]) > 0.8  # the identity is far from every one of the eight maps
    assert max(m.values["self_argmax"]) <= 0.25  # the token itself carries the largest weight in few rows
    uniform = float(band_mask(16, 2).sum()) / 16**2  # uniform attention's mass within |i - j| <= 2: 0.29
    assert min(m.values["band2_mass"]) > 0.45 and uniform == pytest.approx(0.2891, abs=1e-4)


@needs_maps
def test_every_thesis_map_is_full_rank(results):
    m = results[IDS[2]].check
    assert m.verdict == "reproduced" and m.measured == 8 and m.values["ranks"] == [16] * 8
    assert m.anchor == "transformer-math.full-rank-low-l2" and m.falsifier
    assert all(1.0 <= x <= 4.0 for x in m.values["l2_norm"])  # [1, sqrt(n)] for any row-stochastic map


@needs_maps
def test_the_authors_norm_is_the_frobenius_norm_of_the_padded_maps(results):
    """errata low-l2-norm's witness: the author's np.linalg.norm is the Frobenius norm of the padded 350 x 350
    map, 7.5-9.3 here, inside [sqrt(350/16), sqrt(350)] = [4.7, 18.7]; the padded map's rank is 16 of 350."""
    v = results[IDS[2]].check.values
    assert min(v["padded_frobenius"]) == pytest.approx(7.53, abs=0.01)
    assert max(v["padded_frobenius"]) == pytest.approx(9.29, abs=0.01)
    assert all((350 / 16) ** 0.5 < x < 350 ** 0.5 for x in v["padded_frobenius"])
    assert v["padded_rank"] == [16] * 8
    assert all(x < 4.0 < y for x, y in zip(v["l2_norm"], v["padded_frobenius"]))  # two different norms


def test_absent_maps_are_inconclusive(monkeypatch, tmp_path, claim_cache):
    monkeypatch.setenv(thesis_maps.THESIS_MAPS_ENV, str(tmp_path / "absent.npz"))
    monkeypatch.setattr(thesis_maps, "_FITS", {})
    for c in select_claims(IDS):
        m = claim_cache.run(c, 0).check  # computed afresh: the session's cached results saw the file
        assert m.verdict == "inconclusive" and "absent.npz" in m.cannot_decide, m.text
