"""SegmentScores: one segment's numbers as typed fields, averaged over segments field by field (NaN-aware,
the chance levels beside them), and labelled by the same rules as the dicts they replace."""

from __future__ import annotations

import dataclasses
import math

import torch

from attnlab.analysis.heads.scores import RepeatedScores, SegmentScores, average, score_fields
from attnlab.analysis.heads.summary import analyse_segment, decide

EXACT = 1e-15  # float64 means of two or three numbers


def _scores(seed: int, L: int = 3, H: int = 5) -> SegmentScores:
    """A record of random numbers (L, H), offset fractions (L, H, 2), with a (1, 1) chance record."""
    g = torch.Generator().manual_seed(seed)

    def make(shape: tuple[int, ...]) -> SegmentScores:
        return SegmentScores(**{
            f.name: torch.rand(*shape, *((2,) if f.name == "offset_fractions" else ()), generator=g,
                               dtype=torch.float64)
            for f in dataclasses.fields(SegmentScores) if f.name not in ("sink", "sink_norm", "dla", "chance")})

    return dataclasses.replace(make((L, H)), chance=make((1, 1)))


def test_the_average_is_the_mean_of_every_field_and_of_the_chance_levels():
    a, b, c = _scores(0), _scores(1), _scores(2)
    m = average([a, b, c])
    for f in dataclasses.fields(SegmentScores):
        if f.name == "chance":
            continue
        got, want = getattr(m, f.name), None if getattr(a, f.name) is None else (
            getattr(a, f.name) + getattr(b, f.name) + getattr(c, f.name)) / 3
        assert (got is None) == (want is None), f.name
        if want is not None:
            assert got.shape == want.shape and (got - want).abs().max().item() <= EXACT, f.name
    want = (a.chance.entropy + b.chance.entropy + c.chance.entropy) / 3
    assert m.chance.entropy.shape == (1, 1) and (m.chance.entropy - want).abs().item() <= EXACT
    assert m.offset_fractions.shape == (3, 5, 2) and m.sink is None and m.dla is None


def test_a_segment_without_a_number_is_left_out_of_its_average():
    a, b = _scores(0), _scores(1)
    block = b.kovaleva_block.clone()
    block[0, 0] = math.nan
    b = dataclasses.replace(b, kovaleva_block=block)
    nan = torch.full_like(block, math.nan)
    m = average([a, b, dataclasses.replace(_scores(2), kovaleva_block=nan)])
    assert abs(m.kovaleva_block[0, 0].item() - a.kovaleva_block[0, 0].item()) <= EXACT  # one segment has it
    assert abs(m.kovaleva_block[1, 2].item() - (a.kovaleva_block[1, 2] + b.kovaleva_block[1, 2]).item() / 2) <= EXACT
    assert math.isnan(average([dataclasses.replace(a, kovaleva_block=nan)]).kovaleva_block[0, 0].item())


def test_evidence_is_added_with_its_chance_level_and_averaged():
    a, b = _scores(0), _scores(1)
    ones, threes = torch.ones(3, 5, dtype=torch.float64), torch.full((3, 5), 3.0, dtype=torch.float64)
    a = a.with_evidence(ones, ones, None, torch.tensor([[0.25]], dtype=torch.float64))
    b = b.with_evidence(threes, ones, None, torch.tensor([[0.75]], dtype=torch.float64))
    m = average([a, b])
    assert m.sink.eq(2.0).all() and m.chance.sink.item() == 0.5 and m.dla is None
    assert list(score_fields(m))[-2:] == ["sink", "sink_norm"]  # dla and chance left out


def test_undefined_repeated_scores_are_nan_with_chance_levels_of_one_head():
    r = RepeatedScores.undefined((3, 5))
    assert r.induction.shape == (3, 5) and bool(r.induction.isnan().all()) and r.chance.induction_stripe.shape == (1, 1)
    m = average([r, r])
    assert bool(m.previous_token.isnan().all()) and bool(m.chance.duplicate_token.isnan().all())


def test_one_segment_scores_and_its_labels():
    """A previous-token head on 6 tokens: a(i, i-1) = 1 on the 5 rows that have a previous token; uniform
    attention (bidirectional) puts 1/6 there."""
    n = 6
    A = torch.full((1, 2, n, n), 1 / n, dtype=torch.float64)
    A[0, 0] = torch.eye(n, dtype=torch.float64).roll(-1, 1)  # row i on key i - 1 (row 0 on key n - 1)
    A[0, 0, 0] = torch.eye(n, dtype=torch.float64)[0]  # row 0 on itself
    tokens = ["[CLS]", "a", ".", "b", "c", "[SEP]"]
    s = analyse_segment(A, list(range(n)), tokens, None, causal=False,
                        specials={"[CLS]": "[CLS]", "[SEP]": "[SEP]"}, frequencies={i: 1 for i in range(n)})
    assert s.previous.shape == (1, 2) and s.offset_fractions.shape == (1, 2, 2)
    assert abs(s.previous[0, 0].item() - 5 / 6) <= 1e-12 and abs(s.previous[0, 1].item() - 5 / 36) <= 1e-12
    assert abs(s.chance.previous.item() - 5 / 36) <= 1e-12 and abs(s.chance.to_cls.item() - 1 / 6) <= 1e-12
    assert abs(s.to_cls[0, 1].item() - 1 / 6) <= 1e-12 and abs(s.to_punctuation[0, 1].item() - 1 / 6) <= 1e-12
    labels = decide(s)
    assert labels.clark.labels((0, 0)) == ["previous"] and "previous" not in labels.clark.labels((0, 1))
    assert bool(labels.voita.positional[0, 0]) and int(labels.voita.positional_offset[0, 0]) == -1
