"""The invertibility experiments' cases (attnlab.papers.invertibility.cases): the key, the "N:L:d"
strings and the fewest heads of Theorem 1's hypothesis."""

from __future__ import annotations

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.cases import CaseKey, minimal_theorem_heads, parse_cases
from attnlab.papers.invertibility.matrix import minimal_heads


def test_parse_cases():
    assert parse_cases("c", ["2:4:4", "3:3:4"], 3) == ((2, 4, 4), (3, 3, 4))
    assert parse_cases("c", ("3:2",), 2) == ((3, 2),)


@pytest.mark.parametrize("values, parts, message", [
    (None, 3, "c must list cases written N:L:d"),
    (["2:x:4"], 3, "is not N:L:d with integers"),
    (["2:1:4"], 3, "must be N:L:d with N >= 1, L >= 2, d >= 1"),
    (["2:4"], 3, "must be N:L:d"),
    (["2:13:1"], 3, "N\\^L = 8192 rows, more than 4096"),
    ([], 2, "at least one case written N:L"),
])
def test_parse_cases_refuses(values, parts, message):
    with pytest.raises(ConfigError, match=message):
        parse_cases("c", values, parts)


def test_minimal_theorem_heads_ignores_the_cap():
    assert minimal_theorem_heads(2, 4, 4) == 4 and minimal_theorem_heads(2, 3, 3) == 3  # ceil(16/4), ceil(8/3)
    # (3, 3, 5): Pd >= 27 at P = 6, but 1 + P (N + L - 2) >= 27 needs P = 7
    assert minimal_theorem_heads(3, 3, 5) == 6 and minimal_heads(3, 3, 5) == 7


def test_case_key_texts():
    k = CaseKey(N=2, L=4, d=4, P=4, w=0.5)
    assert k.size_text() == "(N,L,d)=(2,4,4)"
    assert k.heads_text() == "(N,L,d,P)=(2,4,4,4)" and k.heads_text(with_w=True) == "(N,L,d,P)=(2,4,4,4) w=0.5"
