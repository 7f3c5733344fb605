"""attnlab.bench: timing, peak memory, the matmul ceiling and the FLOP formulas, on tiny sizes."""

from __future__ import annotations

import time

import pytest
import torch

from attnlab.bench.ceiling import matmul_ceiling
from attnlab.ops.flops import (
    Shape,
    causal_softmax_flops,
    chunked_causal_linear_flops,
    favor_flops,
    full_softmax_flops,
    linear_flops,
    linformer_flops,
    matmul_flops,
    sparse_flops,
    window_pairs,
)
from attnlab.bench.memory import peak_memory, rss_peak_available
from attnlab.bench.timing import num_threads, quartiles, time_call
from attnlab.errors import ConfigError


def test_time_call_medians_are_positive_and_bracket_a_sleep():
    t = time_call(lambda: time.sleep(0.002), repeats=3, warmup=1)
    assert len(t.times) == 3 and all(x > 0 for x in t.times)
    assert 0.002 <= t.q1_s <= t.median_s <= t.q3_s < 0.2  # a 2 ms sleep never takes less than 2 ms
    assert t.iqr_s == pytest.approx(t.q3_s - t.q1_s, abs=0) and t.first_call_s >= 0.002


def test_quartiles_by_hand():
    assert quartiles([4.0, 1.0, 3.0, 2.0, 5.0]) == (2.0, 3.0, 4.0)
    assert quartiles([7.0]) == (7.0, 7.0, 7.0)


def test_threads_are_set_and_restored():
    before = torch.get_num_threads()
    with num_threads(1) as used:
        assert used == 1 == torch.get_num_threads()
    assert torch.get_num_threads() == before
    t = time_call(lambda: None, repeats=1, threads=1)
    assert t.threads == 1 and torch.get_num_threads() == before


@pytest.mark.parametrize("kwargs, message", [({"repeats": 0}, "repeats"), ({"warmup": 0}, "warmup"),
                                             ({"threads": 0}, "threads")])
def test_bad_timing_options(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        time_call(lambda: None, **kwargs)


@pytest.mark.skipif(not rss_peak_available(), reason="needs Linux /proc/self/clear_refs")
def test_peak_memory_of_a_known_allocation():
    peak_memory(lambda: torch.ones(1024))  # first-call initialisation out of the way
    size = 48 * 2**20  # 48 MiB of float32 ones, written so every page is resident
    m = peak_memory(lambda: torch.ones(size // 4))
    assert abs(m.bytes - size) <= 0.03 * size, m  # within 3% (allocator and page-table overhead)
    # a 16 MiB tensor freed before a third is allocated: two are live at a time (32 MiB); the
    # allocator may or may not hand the freed block's pages back first (glibc's dynamic mmap
    # threshold), so the resident peak lies between 32 and 48 MiB
    def two_at_a_time():
        a = torch.ones(2**22)
        b = a * 2
        del a
        return b + 1

    two_at_a_time()
    m = peak_memory(two_at_a_time)
    assert 0.97 * 2**25 <= m.bytes <= 1.03 * 3 * 2**24, m


@pytest.mark.skipif(not rss_peak_available(), reason="needs Linux /proc/self/clear_refs")
def test_peak_memory_does_not_carry_over_an_earlier_peak():
    peak_memory(lambda: torch.ones(2**24))  # 64 MiB
    m = peak_memory(lambda: torch.ones(2**20))  # 4 MiB
    assert m.bytes < 6 * 2**20, m


def test_matmul_ceiling_is_positive_and_consistent():
    c = matmul_ceiling(N=128, repeats=2)
    assert c.gflops >= c.median_gflops > 0 and c.N == 128 and c.dtype == "float32"


S = Shape(B=1, H=2, n=10, d=3)


def test_softmax_flops_by_hand():
    # Q K^T: 10 x 3 by 3 x 10 = 100 dot products of length 3 = 600 FLOPs; P V the same; 2 heads
    assert full_softmax_flops(S) == 2 * (600 + 600)
    # causal: 55 pairs j <= i, 4 d = 12 FLOPs each, 2 heads
    assert causal_softmax_flops(S) == 2 * 55 * 12
    assert matmul_flops(4) == 128
    assert linformer_flops(S, 5) == 2 * (2 * 5 * 10 * 3) * 4  # E K, F V, Q (EK)^T, P (FV)


def test_window_pairs_by_hand_and_in_closed_form():
    # n = 5, w = 2 (|i - j| <= 1): rows have 2, 3, 3, 3, 2 keys
    assert window_pairs(5, 2) == 13
    assert window_pairs(5, 2, causal=True) == 1 + 2 + 2 + 2 + 2
    assert window_pairs(4, 100) == 16  # the window covers everything
    for n, w in ((1000, 256), (4096, 256), (600, 64)):
        h = w // 2
        assert window_pairs(n, w) == n * (w + 1) - h * (h + 1)
        assert window_pairs(n, w, causal=True) == n * (h + 1) - h * (h + 1) // 2
    assert sparse_flops(S, 13) == 2 * 4 * 3 * 13


def test_linear_flops_by_hand():
    # phi(K)^T V: 10 x 4 features by 10 x 3 -> 4 x 3, 2*10*4*3 = 240; phi(Q) U: 240; z: 40; phi(Q) z: 80
    assert linear_flops(S, 4) == 2 * (240 + 240 + 40 + 80)
    # chunks of 5: 2 chunks, each 2*25*4 + 2*25*3 + 25 = 375
    assert chunked_causal_linear_flops(S, 4, 5) == linear_flops(S, 4) + 2 * 2 * 375
    assert favor_flops(S, 4) == linear_flops(S, 4) + 2 * 4 * 10 * 3 * 4
