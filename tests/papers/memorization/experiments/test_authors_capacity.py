"""memorization.authors-capacity (App. H): the released model's preset, the verdict logic on
censored T*, a tiny run, bad configs."""

from __future__ import annotations

import re

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.memorization.capacity_search import SearchResult
from attnlab.papers.memorization.experiments.authors_capacity import (
    EXPERIMENT_ID,
    VARIANTS,
    AuthorsCapacityConfig,
    _row,
    run_authors_capacity,
)
from attnlab.registry import get_experiment
from attnlab.runs.progress import progress_sink

TINY = dict(H_grid=(2,), d=8, n=4, n_classes=10, max_steps=300, lr=3e-2, warmup=10, variants=VARIANTS)


def test_registered_and_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is AuthorsCapacityConfig
    quick, paper = AuthorsCapacityConfig(), AuthorsCapacityConfig(scale="paper")
    assert quick.H_grid == (4,) and paper.H_grid == (4, 8) and paper.variants == VARIANTS
    assert quick.variants == ("released", "plain-dv64")
    released = quick.search_config(4, "released")  # src/attn_models.py's BaselineAttention
    assert (released.model, released.d_v, released.keys, released.d, released.d_h, released.n) == \
        ("authors", 1, "context", 64, 64, 32)
    assert quick.search_config(4, "authors-dv64").d_v == 64 and quick.search_config(4, "plain-dv64").model == "plain"


@pytest.mark.parametrize("variant, lo, hi, verdict", [
    # the released model, a lower bound below 550 - 10%: the search cannot say whether 550 is reached
    ("released", 312, 333, "inconclusive"),
    # a lower bound above 550 + 10% decides: gradient descent memorizes more than the text's ~550
    ("released", 700, 734, "differs"),
    # a lower bound inside the band cannot say the value is not above it
    ("released", 560, 580, "inconclusive"),
    # d_v = 64 reaches 1443 at H = 4: another model, never a verdict on the text's number
    ("plain-dv64", 1443, 1515, "inconclusive"),
    ("authors-dv64", 1443, 1515, "inconclusive"),
])
def test_verdicts_on_the_censored_capacity(variant, lo, hi, verdict):
    cfg = AuthorsCapacityConfig()
    row = _row(cfg, variant, 4, SearchResult(cfg.search_config(4, variant), lo, hi))
    assert row.verdict == verdict and row.measured_text == f">= {lo}"
    assert (row.relation, row.threshold, row.tolerance) == ("±", 550, 55.0) and row.where == "App. H"
    assert bool(row.cannot_decide) == (variant != "released")
    # App. H's "around T = 550"; a differs is a measured number against a printed one: no error in the text
    assert (row.anchor, row.erratum) == ("memorization.apph-550", "none") and row.falsifier
    if variant == "released" and verdict == "inconclusive":
        assert "censored" in row.reason and f"T={hi} was not memorized within the 2000-step budget" in row.reason


def test_tiny_run():
    lines = []
    with progress_sink(lines.append):
        res = run_authors_capacity(AuthorsCapacityConfig(**TINY))
    searches = res.data["searches"]
    # progress: a line per round of each search, then the count of searches done
    rounds = [x for x in lines if x.startswith(EXPERIMENT_ID)]
    for v in VARIANTS:  # every search says each of its rounds; all its attempts appear in them
        said = " ".join(x for x in rounds if f": {v}, H = 2: " in x)
        s = next(s for s in searches if s["variant"] == v)
        assert said and said.count("T = ") == len(s["attempts"])
    assert all(re.search(r"T = \d+ (memorized|budget|superseded|diverged) at step \d+", x) for x in rounds)
    assert [x for x in lines if "capacity searches" in x][-1] == "3/3 capacity searches"
    assert [s["variant"] for s in searches] == list(VARIANTS)
    for s, row in zip(searches, res.summary):
        assert s["largest_success"] >= 7  # the Theorem 1 bound 2 (4 - 1) + 1 at least
        assert s["capacity"] == f">= {s['largest_success']}" and row.measured_text == s["capacity"]
        assert row.verdict == "info"  # H = 2: the text states no number
    assert len(res.tables[0].rows) == 3 and res.figures[0].file == "memorization-authors-capacity.png"


@pytest.mark.parametrize("bad, message", [
    (dict(variants=("released", "mine")), "variants must be distinct names among released"),
    (dict(d=7), "the authors' model needs an even d"),
    (dict(resolution=1.0), "resolution must be a finite number in [0, 1), got 1.0"),
])
def test_bad_config(bad, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        AuthorsCapacityConfig(**bad)


def test_the_h8_row_checks_app_h_1300_and_differs_with_no_erratum():
    """The paper-scale run's T* >= 1779 at H = 8 against "around T = 1300": a lower bound above 1430
    differs, a measured number against a printed one (erratum "none"; issue 34 takes up the
    like-for-like run)."""
    cfg = AuthorsCapacityConfig(scale="paper", variants=("released",))
    row = _row(cfg, "released", 8, SearchResult(cfg.search_config(8, "released"), 1779, 1815))
    assert (row.verdict, row.measured_text, row.anchor, row.erratum) == ("differs", ">= 1779",
                                                                        "memorization.apph-1300", "none")
