"""memorization.construction: Theorem 1's weights built, checked and reported."""

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.memorization.experiments.construction import (
    ERROR_TARGET,
    EXPERIMENT_ID,
    ConstructionConfig,
    build_one,
    run as run_construction,
)
from attnlab.registry import get_experiment

TINY = dict(d=16, n=6, d_h=8, H_shared=(1, 3), H_per_example=(2,), H_labels=2, n_classes=20)


def test_registered_and_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is ConstructionConfig and e.run is run_construction
    quick, paper = ConstructionConfig(), ConstructionConfig(scale="paper")
    assert quick.H_shared == (1, 2, 4, 8, 12, 16, 20) and quick.H_per_example == (1, 4, 8) and quick.H_labels == 4
    assert paper.H_labels == 8 and max(paper.H_shared) == 24
    assert ConstructionConfig(H_shared=(4, 1, 4)).H_shared == (1, 4)  # sorted, duplicates dropped


def test_tiny_run_passes_every_row(storable):
    out = run_construction(ConstructionConfig(**TINY))
    storable(out)
    assert out.deviations == []  # the proof's weights on data that meets Assumptions 1-2: no departure
    builds = out.data["builds"]
    assert [(b["H"], b["context"]) for b in builds] == [(1, "shared"), (3, "shared"), (2, "per-example"),
                                                        (2, "shared"), (2, "shared")]
    for b in builds:
        assert b["T"] == b["H"] * (6 - 1) + 1 and b["rank_Z"] == b["T"]
        assert max(b["max_abs_error"], b["numpy_max_abs_error"]) <= ERROR_TARGET
    classes = [b for b in builds if b["labels"] == "classes"][0]
    assert classes["d_out"] == 20 and classes["accuracy"] == 1.0  # 20 classes > d = 16: the +-s_i codes
    # shared, per-example, classes, d_out = 4: attnlab's construction, so a miss would be a fail; the real
    # labels realise Theorem 1 (anchored), the class codes are attnlab's (a sanity row; was reproduced)
    assert [(row.role, row.verdict, row.anchor) for row in out.summary] == [
        ("construction", "reproduced", "memorization.theorem-1"), ("construction", "reproduced", "memorization.theorem-1"),
        ("construction", "sanity", ""), ("construction", "reproduced", "memorization.theorem-1")]
    assert out.summary[0].measured == max(max(b["max_abs_error"], b["numpy_max_abs_error"]) for b in builds[:2])
    assert {f.file for f in out.figures} == {"memorization-construction-error.png",
                                             "memorization-construction-conditioning.png"}
    (table,) = out.tables  # the errata table is the report's own (results.json "errata")
    assert len(table.rows) == len(builds) and len(table.columns) == len(table.formats) == 12


def test_paper_size_twenty_heads_shared_context():
    """d = 64, n = 32, d_h = 64, H = 20: T = 621 real labels to 1e-8 by both forwards."""
    row = build_one(ConstructionConfig(), 20, shared=True)
    assert row.T == 621 and row.rank_Z == 621
    assert row.max_abs_error <= ERROR_TARGET and row.numpy_max_abs_error <= ERROR_TARGET


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=16, d=16), "needs n < d"),
    (dict(n_classes=33, d=16, n=6), "n_classes must lie in 2..2d = 32"),
    (dict(H_shared=(0,)), "H_shared must be a non-empty list of integers >= 1"),
    (dict(d_h=0), "d_h must be an integer >= 1"),
])
def test_bad_config(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ConstructionConfig(**kwargs)
