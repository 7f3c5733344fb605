"""The decision rules on given scores (averages over documents) are the rules the map classifiers
apply: deciding on one document's own numbers gives that document's labels, and averages are
decided at the thresholds, with the boundaries on the documented side."""

from __future__ import annotations

import torch

from attnlab.analysis.heads import (
    BROAD_ENTROPY_NATS,
    MIX_SHARE,
    PATTERN_THRESHOLD,
    POSITIONAL_FRACTION,
    RARE_TOKEN_FRACTION,
    HeadStatistics,
    clark_labels,
    clark_labels_from_statistics,
    kovaleva_decide,
    kovaleva_patterns,
    voita_labels,
    voita_labels_from_scores,
)
from attnlab.analysis.heads.voita import VOITA_OFFSETS


def _maps(seed=0, L=3, H=5, n=9):
    g = torch.Generator().manual_seed(seed)
    A = torch.softmax(3 * torch.randn(L, H, n, n, generator=g, dtype=torch.float64), -1)
    A[0, 0] = torch.eye(n, dtype=torch.float64).roll(-1, 1)  # one previous-token-like head, one [CLS] head
    A[0, 1] = 0
    A[0, 1, :, 0] = 1
    return A


def test_deciding_on_a_documents_own_numbers_gives_its_labels():
    A = _maps()
    n = A.shape[-1]
    keys = {"[CLS]": [0], "[SEP]": [n - 1]}
    c = clark_labels(A, keys=keys)
    again = clark_labels_from_statistics(c.stats)
    for name in ("broad", "previous", "next"):
        assert torch.equal(getattr(c, name), getattr(again, name))
    assert all(torch.equal(c.special[k], again.special[k]) for k in c.special)
    assert bool(c.special["[CLS]"][0, 1])
    segments = torch.tensor([0] * 4 + [1] * (n - 4))
    k = kovaleva_patterns(A, special=[0, n - 1], segments=segments)
    assert torch.equal(kovaleva_decide(k.scores["vertical"], k.scores["diagonal"], k.scores["block"]), k.pattern)
    freq = torch.arange(n, 0, -1, dtype=torch.float64)
    v = voita_labels(A, frequencies=freq)
    w = voita_labels_from_scores(v.offset_fractions, v.offsets, v.confidence, rare_mass=v.rare_mass,
                                 rare_argmax=v.rare_argmax)
    assert torch.equal(v.positional, w.positional) and torch.equal(v.positional_offset, w.positional_offset)
    assert torch.equal(v.rare, w.rare)


def test_averages_are_decided_at_the_thresholds():
    e = torch.tensor([BROAD_ENTROPY_NATS, BROAD_ENTROPY_NATS + 1e-9, 1.0], dtype=torch.float64)
    zero = torch.zeros(3, dtype=torch.float64)
    stats = HeadStatistics(entropy=e, uniform_entropy=zero, distance=zero, previous=zero, self_=zero, next=zero,
                           confidence=zero)
    assert clark_labels_from_statistics(stats).broad.tolist() == [False, True, False]  # strictly greater
    tau, mu = PATTERN_THRESHOLD, MIX_SHARE
    f64 = dict(dtype=torch.float64)
    v = torch.tensor([tau, 0.0, mu, mu - 1e-9, 0.1], **f64)
    d = torch.tensor([0.0, tau, tau - mu, tau - mu + 1e-9, 0.1], **f64)
    b = torch.tensor([0.0, 0.0, 0.0, 0.0, float("nan")], **f64)
    assert kovaleva_decide(v, d, b).tolist() == [0, 1, 2, 4, 4]  # NaN block never decides block
    assert kovaleva_decide(torch.tensor([0.1]), torch.tensor([0.1]), torch.tensor([tau])).tolist() == [3]
    F = torch.tensor([[POSITIONAL_FRACTION, 0.1], [0.2, POSITIONAL_FRACTION - 1e-9], [float("nan"), 0.95]], **f64)
    r = torch.tensor([RARE_TOKEN_FRACTION, RARE_TOKEN_FRACTION - 1e-9, 0.0], **f64)
    w = voita_labels_from_scores(F, VOITA_OFFSETS, torch.zeros(3), rare_mass=torch.zeros(3), rare_argmax=r)
    assert w.positional.tolist() == [True, False, True] and w.positional_offset.tolist() == [-1, 0, 1]
    assert w.rare.tolist() == [True, False, False]
