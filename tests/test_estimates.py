"""attnlab.estimates: the operation counts, the machine's rates, the record and the refusal."""

import math
from dataclasses import dataclass

import pytest

from attnlab import estimates
from attnlab.config import Config, RunConfig, check_int, param
from attnlab.errors import ConfigError
from attnlab.estimates import (
    Estimate,
    fitting_hint,
    format_bytes,
    format_seconds,
    largest_fitting,
    matmul_flops,
    qr_flops,
    require_fits,
    svd_flops,
    total,
)
from tolerances import FLOAT64

GiB = 2 ** 30


def test_standard_operation_counts():
    assert matmul_flops(3, 4, 5) == 120
    assert qr_flops(512, 256) == 2 * 512 * 256 ** 2 - 2 * 256 ** 3 / 3 == pytest.approx(55924053.33, abs=0.01)
    assert qr_flops(256, 512, q=True) == 2 * qr_flops(512, 256)  # the orientation does not matter
    assert svd_flops(100, 40) == 4 * 100 * 1600 - 4 * 40 ** 3 / 3
    assert svd_flops(40, 100, vectors=True) == 14 * 100 * 1600 + 8 * 40 ** 3


def test_seconds_are_each_kind_of_work_over_its_rate(monkeypatch):
    monkeypatch.setattr(estimates, "_RATES", {"gemm": lambda: 1e10, "lapack": lambda: 1e9, "traffic": lambda: 1e10,
                                              "arb": lambda: 1e8, "python": lambda: 1e7, "calls": lambda: 1e4})
    e = Estimate(GiB, "x", gemm=2e10, lapack=3e9, traffic=5e9, arb=1e8, python=2e7, calls=1e4)
    assert e.seconds == pytest.approx(2 + 3 + 0.5 + 1 + 2 + 1, rel=FLOAT64)
    assert e.flops == 2.3e10
    assert e.describe() == "1.0 GiB, about 9.5 s on one core of this machine"
    d = e.to_dict()
    assert d["peak_bytes"] == GiB and d["peak"] == "1.0 GiB" and d["seconds"] == pytest.approx(9.5)
    assert d["work"]["lapack_flops"] == 3e9 and d["work"]["small_calls"] == 1e4


def test_rates_are_measured_once_and_positive():
    first = estimates.rates()
    assert set(first) == set(estimates.KINDS)
    assert all(math.isfinite(v) and v > 0 for v in first.values())
    assert estimates.rates() == first  # cached: measured once per process
    # a 512 x 512 product runs faster than 10 MFLOP/s and slower than 100 TFLOP/s on any CPU
    assert 1e7 < first["gemm"] < 1e14


def test_rates_are_one_threads_and_repeat_between_measurements():
    """Timed on one BLAS thread: the multi-threaded QR rate moved 100x between identical runs on shared
    cores (module docstring), one thread's within 10%; 3x here leaves room for a loaded machine."""
    import numpy as np
    from threadpoolctl import threadpool_info

    seen = []
    estimates._timed(lambda: seen.append([i["num_threads"] for i in threadpool_info()]), repeats=1)
    assert seen and all(threads == [1] * len(threads) for threads in seen)
    a = np.random.default_rng(0).standard_normal((512, 256))
    measured = [estimates.qr_flops(512, 256, q=True) / estimates._timed(lambda: np.linalg.qr(a)) for _ in range(3)]
    assert max(measured) < 3 * min(measured), measured
    assert estimates.Estimate(GiB, "x", gemm=1e9).describe().endswith("on one core of this machine")


def test_a_negative_or_nan_amount_is_refused():
    with pytest.raises(ValueError, match="peak_bytes must be a number >= 0"):
        Estimate(-1, "x")
    with pytest.raises(ValueError, match="gemm"):
        Estimate(1, "x", gemm=float("nan"))


def test_formats():
    assert [format_bytes(b) for b in (512, 3 * 2 ** 10, 3.45 * 2 ** 20, 2.3 * GiB, 1234567 * GiB)] == \
        ["512 B", "3.0 KiB", "3.5 MiB", "2.3 GiB", "1,234,567 GiB"]
    assert [format_seconds(s) for s in (0.25, 40.4, 720, 4 * 3600, 10 * 86400)] == \
        ["0.2 s", "40 s", "12 min", "4.0 h", "10 days"]


def test_require_fits_is_one_line_with_both_sizes_and_what_to_lower():
    e = Estimate(3 * GiB, "Z (10 x 20 float64)", lower=("H",))
    require_fits(e, "the build", available=4 * GiB)  # fits: nothing raised
    with pytest.raises(ConfigError) as err:
        require_fits(e, "the build", available=GiB)
    assert str(err.value) == ("the build needs about 3.0 GiB of memory (Z (10 x 20 float64)); cpu has 1.0 GiB: "
                              "lower H")
    with pytest.raises(ConfigError, match=r"has 1.0 GiB: lower n below 8$"):
        e.require("the build", available=GiB, change="lower n below 8")


@dataclass(frozen=True)
class _Square(Config):
    k: int = param(100, "size")
    floor: int = param(1, "smallest valid k")

    def validate(self) -> None:
        check_int("k", self.k, minimum=self.floor)


def _square_estimate(p: _Square) -> Estimate:
    return Estimate(p.k ** 2, f"{p.k} x {p.k}", lower=("k",))


def test_largest_fitting_value_by_bisection():
    p = _Square(k=100)
    assert largest_fitting(_square_estimate, p, "k", 2500) == 50
    assert largest_fitting(_square_estimate, p, "k", 2499) == 49
    assert largest_fitting(_square_estimate, p, "k", 0.5) is None  # not even the smallest fits
    assert largest_fitting(_square_estimate, _Square(k=100, floor=3), "k", 2500) == 50  # 1 and 2 are invalid
    assert fitting_hint(_square_estimate, p, _square_estimate(p), 2500) == "lower k (k <= 50 fits)"


def test_total_takes_the_largest_peak_and_sums_the_work():
    a = Estimate(10, "a", gemm=1, lower=("x",))
    b = Estimate(20, "b", gemm=2, lapack=3, lower=("y",))
    t = total([a, b])
    assert (t.peak_bytes, t.what, t.gemm, t.lapack, t.lower) == (20, "b", 3, 3, ("y",))


@dataclass(frozen=True)
class _Run(RunConfig):
    n: int = param(10, "length n")

    def estimate(self) -> Estimate:
        return Estimate(8 * self.n ** 2, f"{self.n} x {self.n} float64", change="lower n")


def test_a_run_config_refuses_what_exceeds_its_device():
    assert _Run(n=1000).n == 1000  # 8 MB fits any machine
    with pytest.raises(ConfigError, match=r"^the run needs about 7,451 GiB of memory \(1000000 x 1000000 float64\); "
                                          r"cpu has [\d.,]+ [KMG]iB: lower n$"):
        _Run(n=10 ** 6)


def test_a_time_bound_is_said_as_one_and_survives_a_total():
    exact = Estimate(2 ** 20, "a", gemm=1e9)
    bound = Estimate(2 ** 21, "b", gemm=1e9, time_bound="the step budget")
    assert "about" in exact.describe() and "at most" in bound.describe()
    both = total([exact, bound])
    assert both.time_bound == "the step budget" and both.gemm == 2e9 and "at most" in both.describe()
    assert total([exact, exact]).time_bound == "" and exact.to_dict()["time_bound"] == ""


def test_the_rated_gpu_time_is_each_kind_over_the_gpu_rates_and_host_work_at_this_machines(monkeypatch):
    monkeypatch.setattr(estimates, "_RATES", {"gemm": lambda: 1e10, "lapack": lambda: 1e9, "traffic": lambda: 1e10,
                                              "arb": lambda: 1e8, "python": lambda: 1e7, "calls": lambda: 1e4})
    e = Estimate(GiB, "x", gemm=2.5e13, lapack=1e12, traffic=4e12, arb=1e8, python=2e7, calls=3e4)
    g = estimates.GPU_RATES
    want = 2.5e13 / g["gemm"] + 1e12 / g["lapack"] + 4e12 / g["traffic"] + 1 + 2 + 3e4 / g["calls"]
    assert estimates.gpu_seconds(e) == pytest.approx(want, rel=FLOAT64)
    assert estimates.gpu_seconds(e) == pytest.approx(1 + 1 + 2 + 1 + 2 + 3, rel=FLOAT64)
    assert estimates.gpu_seconds(Estimate(GiB, "x", gemm=1e9, timed=2.0)) is None  # seconds timed on this CPU
