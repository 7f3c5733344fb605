"""Kovaleva et al.'s five patterns by template fit: hand-built maps, the rule's order, and the fact
that the mass on a template is 1 - d/2 for the nearest row-stochastic matrix on it."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.analysis.heads.kovaleva import KOVALEVA_PATTERNS, MIX_SHARE, PATTERN_THRESHOLD, kovaleva_patterns
from tolerances import FLOAT64

N, SEP = 23, 11  # [CLS] 1 .. 10 [SEP] 12 .. 21 [SEP]
SPECIAL = [0, SEP, N - 1]
SEGMENTS = (torch.arange(N) > SEP).long()


def _shift(n, k):
    return torch.nn.functional.one_hot((torch.arange(n) + k).clamp(0, n - 1), n).double()


def _rows_to(T):
    T = T.double()
    return T / T.sum(-1, keepdim=True)


def _maps():
    to_special = torch.zeros(N, N, dtype=torch.bool)
    to_special[:, SPECIAL] = True
    sep = torch.nn.functional.one_hot(torch.where(torch.arange(N) <= SEP, SEP, N - 1), N).double()
    far = torch.nn.functional.one_hot((torch.arange(N) + 12) % N, N).double()  # into the other sentence
    return {"vertical": _rows_to(to_special),
            "diagonal": 0.5 * _shift(N, -1) + 0.5 * _shift(N, 1),
            "vertical+diagonal": 0.4 * sep + 0.6 * _shift(N, -1),
            "block": _rows_to(SEGMENTS[:, None] == SEGMENTS[None, :]),
            "heterogeneous": far}


def test_each_built_map_gets_its_pattern():
    maps = _maps()
    out = kovaleva_patterns(torch.stack(list(maps.values())), special=SPECIAL, segments=SEGMENTS)
    assert out.names() == list(maps)
    assert out.scores["vertical"][0].item() == pytest.approx(1.0)
    assert out.thresholds == {"pattern": PATTERN_THRESHOLD, "mix_share": MIX_SHARE} == {"pattern": 0.6,
                                                                                        "mix_share": 0.2}
    assert KOVALEVA_PATTERNS[int(out.pattern[2])] in out.summary((2,))


def test_vertical_plus_diagonal_scores_by_hand():
    out = kovaleva_patterns(_maps()["vertical+diagonal"], special=SPECIAL, segments=SEGMENTS)
    # 0.4 on the [SEP] closing the row's sentence (always a vertical column) and 0.6 on i - 1, which is a
    # special column for rows 0 and 1 ([CLS]) and 12 (the first [SEP]): vertical 0.4 + 0.6 * 3/23,
    # diagonal 0.6 * 20/23 (a [SEP] next to the row is vertical first, never diagonal)
    assert out.scores["vertical"].item() == pytest.approx(0.4 + 0.6 * 3 / N)
    assert out.scores["diagonal"].item() == pytest.approx(0.6 * (N - 3) / N)
    assert out.names() == "vertical+diagonal"  # 0.478 and 0.522: neither alone reaches 0.6
    heavier = kovaleva_patterns(0.5 * _maps()["vertical"] + 0.5 * _maps()["vertical+diagonal"], special=SPECIAL)
    assert heavier.names() == "vertical"  # the first rule that holds wins


def test_chance_levels_of_uniform_attention():
    out = kovaleva_patterns(torch.full((N, N), 1.0 / N, dtype=torch.float64), special=SPECIAL, segments=SEGMENTS)
    assert out.scores["block"].item() == pytest.approx((12 * 12 + 11 * 11) / N**2)
    for k in ("vertical", "diagonal", "block"):
        assert out.scores[k].item() == pytest.approx(out.chance[k].item())  # uniform attention scores chance
    assert out.names() == "heterogeneous"


def test_block_needs_two_segments_and_vertical_columns_default_to_the_most_attended():
    out = kovaleva_patterns(_maps()["block"])
    assert math.isnan(out.scores["block"].item()) and out.names() == "heterogeneous"
    one_segment = kovaleva_patterns(_maps()["block"], segments=torch.zeros(N, dtype=torch.long))
    assert math.isnan(one_segment.scores["block"].item())
    A = torch.zeros(N, N, dtype=torch.float64)
    A[:, 4] = 0.7
    A[:, 8] = 0.3
    auto = kovaleva_patterns(A)
    assert auto.vertical_columns.nonzero().flatten().tolist() == [4] and auto.names() == "vertical"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.sampled_from([3, 5, 7]))
def test_template_mass_is_one_minus_half_the_distance_to_the_template(seed, n):
    """For a support T and a row-stochastic row a: min over row-stochastic x on T of |a - x| = 2 (1 - m_T)."""
    g = torch.Generator().manual_seed(seed)
    a = -torch.log(torch.rand(n, generator=g, dtype=torch.float64))
    a = a / a.sum()
    T = torch.rand(n, generator=g) < 0.5
    T[int(torch.randint(n, (1,), generator=g))] = True
    m = float(a[T].sum())
    x = torch.where(T, a, 0.0)
    x[T.nonzero()[0]] += 1 - m  # move the missing mass onto T: distance exactly 2 (1 - m)
    assert float((a - x).abs().sum()) == pytest.approx(2 * (1 - m), abs=FLOAT64)
    y = torch.where(T, -torch.log(torch.rand(n, generator=g, dtype=torch.float64)), 0.0)
    y = y / y.sum()  # any other row-stochastic row on T is no closer
    assert float((a - y).abs().sum()) >= 2 * (1 - m) - FLOAT64
