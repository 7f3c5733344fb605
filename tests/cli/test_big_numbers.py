"""A huge parameter gives one short line, at once: N^L, sizes and the echoed value in scientific form."""

from __future__ import annotations

import time

import pytest


@pytest.mark.parametrize("argv, needle", [
    (["construct", "invertibility", "--set", "N=1000", "--set", "L=1000"],
     "N^L = 1.00e+3000 rows exceeds 4096; lower N or L"),
    (["construct", "invertibility", "--set", "N=1000000", "--set", "L=1000000000"],
     "N^L = 1.00e+6000000000 rows exceeds 4096"),
    (["construct", "invertibility", "--set", "P=" + "9" * 50],
     "P=9.99e+49 needs about 4.44e+44 GiB of memory (A (8 x 1.99e+50) in 64-bit balls"),
    (["construct", "memorization", "--set", "H=" + "9" * 5000], "--set H=" + "9" * 40 + "... (5,000 characters)"),
    (["construct", "logic", "--set", "M=-" + "9" * 30], "M must be an integer >= 2, got -9.99e+29"),
])
def test_a_huge_value_gives_one_short_line(cli_error, argv, needle):
    start = time.perf_counter()
    line = cli_error(argv)
    assert needle in line
    assert len(line) < 400
    assert time.perf_counter() - start < 10


@pytest.mark.slow
def test_a_memorization_with_more_heads_than_atoms_is_refused_in_seconds(cli_error):
    start = time.perf_counter()
    line = cli_error(["construct", "memorization", "--set", "H=" + "9" * 50])
    assert "H=9.99e+49 needs about 1.18e+96 GiB of memory (Z (3.09e+51 x 6.39e+51 float64) and its QR)" in line
    assert time.perf_counter() - start < 30
