"""Numbers in messages: in full up to twelve digits, in scientific form beyond, never thousands of
digits, and computed without building a huge power first."""

from __future__ import annotations

import time

import pytest

from attnlab.config import format_int, format_power, power_exceeds, shorten_numbers, shown
from attnlab.estimates import GiB, format_bytes, format_seconds


@pytest.mark.parametrize("n, text", [pytest.param(n, text, id=text) for n, text in [
    (0, "0"), (4096, "4096"), (-7, "-7"), (999_999_999_999, "999999999999"),
    (10 ** 12, "1.00e+12"), (123_456_789_012_345, "1.23e+14"), (-123_456_789_012_345, "-1.23e+14"),
    (10 ** 3000, "1.00e+3000"), (10 ** 3000 - 1, "9.99e+2999"),  # truncated, not rounded up
    (10 ** 5000, "1.00e+5000"),  # beyond Python's 4300-digit limit for str(int)
]])
def test_format_int(n, text):
    assert format_int(n) == text


@pytest.mark.parametrize("base, exponent, text", [
    (10, 4, "10000"), (2, 12, "4096"), (1000, 1000, "1.00e+3000"), (2, 100, "1.26e+30"),
    (3, 1000, "1.32e+477"), (10 ** 6, 10 ** 9, "1.00e+6000000000"),
])
def test_format_power_matches_format_int_without_computing_huge_powers(base, exponent, text):
    assert format_power(base, exponent) == text
    if exponent * len(str(base)) < 5000:
        assert format_int(base ** exponent) == text


def test_power_exceeds_decides_at_the_limit_and_fast_for_huge_powers():
    assert not power_exceeds(2, 12, 4096) and power_exceeds(2, 13, 4096) and power_exceeds(4097, 1, 4096)
    start = time.perf_counter()
    assert power_exceeds(10 ** 6, 10 ** 12, 4096)
    assert time.perf_counter() - start < 0.01


def test_shown_and_shorten_numbers():
    assert shown(0) == "0" and shown("x") == "'x'" and shown(10 ** 40) == "1.00e+40"
    assert shown("9" * 5000, quote=False) == "9" * 40 + "... (5,000 characters)"
    assert shorten_numbers("A (8 x " + "9" * 30 + ") at /runs/1700000000000/") == "A (8 x 9.99e+29) at /runs/1700000000000/"
    assert shorten_numbers("Z (3100001 x 6400000000000)", 12) == "Z (3100001 x 6.40e+12)"


def test_sizes_and_durations_turn_scientific_at_a_billion_units():
    assert format_bytes(1_182_558 * GiB) == "1,182,558 GiB"
    assert format_bytes(999_999_999 * GiB) == "999,999,999 GiB" and format_bytes(5 * 10 ** 44 * GiB) == "5.00e+44 GiB"
    assert format_bytes(10 ** 400) == "9.31e+390 GiB"  # an int beyond float range
    assert format_seconds(9 * 86400) == "9 days" and format_seconds(1e20) == "1.16e+15 days"
