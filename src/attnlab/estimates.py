"""Memory and time of a computation, estimated before it runs.

An :class:`Estimate` is what a construction (``Construction.estimate``) or an experiment
config (``Config.estimate``) says about itself before any array is allocated: the peak
memory, the work that dominates its time, and one line naming what dominates. It is
arithmetic on the parameters, except ``timed``: seconds an estimate measures by running a short
piece of the real computation (one training evaluation at the run's sizes), for work the six
kinds below do not rate well.

Memory: ``peak_bytes``, the most the computation holds at once (arrays, LAPACK workspace
and temporaries), counted from the shapes it allocates.

Time: the work is counted in six kinds, each with its standard cost, and divided by a
rate of this machine (:func:`rates`):

    seconds = gemm / R_gemm + lapack / R_lapack + traffic / R_mem + arb / R_arb
              + python / R_python + calls / R_calls

    gemm     floating-point operations of matrix products, 2 m k n for (m x k) @ (k x n)
             (:func:`matmul_flops`)
    lapack   operations of factorizations, counted with the standard flop counts
             (Golub & Van Loan, Matrix Computations, 4th ed., §5.2, §8.6):
             QR of m x n (m >= n), Householder, R only   2 m n^2 - 2 n^3 / 3
                                    with the thin Q       4 m n^2 - 4 n^3 / 3
             SVD of m x n (m >= n), singular values only 4 m n^2 - 4 n^3 / 3
                                    with the thin U and V 14 m n^2 + 8 n^3
             (:func:`qr_flops`, :func:`svd_flops`)
    traffic  bytes read and written by element-wise work (copies, exp, ReLU, fancy indexing)
    arb      ball-arithmetic operations (python-flint's arb_mat at a few hundred bits)
    python   operations on single numbers run by the interpreter (a loop over ball entries)
    calls    small library calls whose fixed cost outweighs their arithmetic (a 30 x 64 SVD,
             a softmax over a few hundred numbers): what dominates small problems

The rates are measured once per process, on first use, by six small timings (each the
best of five after a warm-up call, about 0.2 s in all): a 512 x 512 float64 product
(R_gemm = 2 * 512^3 / t), the QR of a 512 x 256 float64 matrix with its Q
(R_lapack = qr_flops(512, 256, q=True) / t), a copy of 32 MiB (R_mem = 64 MiB / t), a
96 x 96 arb_mat product at 256 bits (R_arb = 2 * 96^3 / t), a Python loop of 2000
multiply-adds of arb balls at 256 bits (R_python = 4000 / t) and the SVD of a 32 x 64 matrix
(R_calls = 1 / t). Every timing runs on one thread (BLAS limited to one): one core's speed is
stable when other processes share the cores, where the machine's multi-threaded speed is not
(a QR of 512 x 256 on two OpenBLAS threads measured from 2.7e7 to 2.5e9 flop/s in six runs on
two loaded cores, against 7.8e9 to 8.6e9 on one thread), and an estimate that moved 100x between
identical runs told nothing. The estimate is therefore the time on one core of this machine
(:meth:`Estimate.describe` says so): more threads shorten it on an idle machine, and contention
for the cores can lengthen it.
What each construction counts, and how close it comes to what it measures, its own
``estimate`` says.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from attnlab.config import FULL_DIGITS, device_memory, format_int, shorten_numbers
from attnlab.errors import AttnlabError, ConfigError

GiB = 2 ** 30
BIG_DIGITS = 9  # sizes and durations of 10^9 units and more print in scientific form
ONE_CORE = "one core of this machine"  # where the estimated time holds (the rates are one thread's)
ANNOUNCE_SECONDS = 10.0  # commands say the estimate on stderr before work estimated to take longer
KINDS = ("gemm", "lapack", "traffic", "arb", "python", "calls")


# ---- standard operation counts -----------------------------------------------------------
def matmul_flops(m: float, k: float, n: float) -> float:
    """2 m k n: the multiplications and additions of (m x k) @ (k x n)."""
    return 2.0 * m * k * n


def qr_flops(m: float, n: float, *, q: bool = False) -> float:
    """Householder QR of an m x n matrix: 2 a b^2 - 2 b^3 / 3 with a = max(m, n), b = min(m, n),
    twice that when the thin Q is formed too (``np.linalg.qr``'s default)."""
    a, b = max(m, n), min(m, n)
    return (2 if q else 1) * (2.0 * a * b * b - 2.0 * b ** 3 / 3.0)


def svd_flops(m: float, n: float, *, vectors: bool = False) -> float:
    """SVD of an m x n matrix (a = max, b = min), Golub-Reinsch: 4 a b^2 - 4 b^3 / 3 for the
    singular values (the bidiagonalization), 14 a b^2 + 8 b^3 with the thin U and V."""
    a, b = max(m, n), min(m, n)
    return 14.0 * a * b * b + 8.0 * b ** 3 if vectors else 4.0 * a * b * b - 4.0 * b ** 3 / 3.0


# ---- the record ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """What a computation will need, before it runs (module docstring).

    peak_bytes: the peak memory, bytes
    what:       one line naming what dominates, e.g. "Z (3101 x 6400 float64) and its QR"
    gemm, lapack, traffic, arb, python, calls: the work of each kind (flops, flops, bytes,
                ball operations, interpreted operations, small calls)
    lower:      the parameters that set the size, in the order a user should lower them
    change:     what to change when it does not fit, when ``lower`` cannot say it
                (e.g. "give every n below 4096")
    time_bound: why the time is an upper bound rather than an estimate, when it is (e.g. "the
                step budget: training stops once the examples are memorised"); "" otherwise
    timed:      seconds measured directly: a short piece of the real computation timed on this
                machine (one training evaluation at the run's sizes), times how often the run repeats
                it; for work whose rate the six kinds above do not capture (small float32 products,
                autograd's per-operation cost). Added to the kinds' time.
    """

    peak_bytes: float
    what: str
    gemm: float = 0.0
    lapack: float = 0.0
    traffic: float = 0.0
    arb: float = 0.0
    python: float = 0.0
    calls: float = 0.0
    lower: tuple[str, ...] = ()
    change: str = ""
    time_bound: str = ""
    timed: float = 0.0

    def __post_init__(self) -> None:
        for name in ("peak_bytes", *KINDS, "timed"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v >= 0 and not math.isnan(v)):
                raise ValueError(f"Estimate.{name} must be a number >= 0, got {v!r}")

    @property
    def flops(self) -> float:
        """Floating-point operations (gemm + lapack)."""
        return self.gemm + self.lapack

    @property
    def seconds(self) -> float:
        """The estimated time on this machine: each kind of work over its measured rate, plus the
        directly timed seconds."""
        return self.timed + sum(getattr(self, k) / rate(k) for k in KINDS if getattr(self, k) > 0)

    def fits(self, device: str = "cpu", available: int | None = None) -> bool:
        """Whether peak_bytes fit in what ``device`` has (True when that is unknown)."""
        available = device_memory(device) if available is None else available
        return available is None or self.peak_bytes <= available

    def require(self, what: str, *, device: str = "cpu", available: int | None = None, change: str = "") -> None:
        """ConfigError when the peak memory exceeds what ``device`` has (:func:`require_fits`)."""
        require_fits(self, what, device=device, available=available, change=change)

    def describe(self) -> str:
        """"2.3 GiB, about 40 s on one core of this machine" ("at most" where the time is a bound): the
        rates are one core's (module docstring)."""
        when = "at most" if self.time_bound else "about"
        return f"{format_bytes(self.peak_bytes)}, {when} {format_seconds(self.seconds)} on {ONE_CORE}"

    def to_dict(self) -> dict[str, Any]:
        """The estimate as JSON values (seconds measured against this machine's rates)."""
        return {"peak_bytes": int(self.peak_bytes), "peak": format_bytes(self.peak_bytes),
                "seconds": self.seconds, "what": self.what,
                "work": {"gemm_flops": self.gemm, "lapack_flops": self.lapack, "traffic_bytes": self.traffic,
                         "arb_operations": self.arb, "python_operations": self.python,
                         "small_calls": self.calls, "timed_seconds": self.timed},
                "lower": list(self.lower), "time_bound": self.time_bound}


def format_bytes(n: float) -> str:
    """Bytes as "512 KiB", "3.4 MiB", "2.3 GiB", "1,182,558 GiB" (two significant figures and more),
    and in scientific form from 10^9 GiB ("4.44e+35 GiB"), however large ``n`` is."""
    if n >= 10 ** BIG_DIGITS * GiB:
        return f"{format_int(int(n) // GiB, full_digits=BIG_DIGITS)} GiB"
    for unit, size in (("GiB", GiB), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            v = n / size
            return f"{v:.1f} {unit}" if v < 100 else f"{v:,.0f} {unit}"
    return f"{int(n)} B"


def format_seconds(s: float) -> str:
    """Seconds as "0.3 s", "40 s", "12 min", "3.5 h", "9 days", "1.23e+12 days"."""
    if s < 10:
        return f"{s:.1f} s"
    if s < 600:
        return f"{s:.0f} s"
    if s < 3 * 3600:
        return f"{s / 60:.0f} min"
    if s < 3 * 86400:
        return f"{s / 3600:.1f} h"
    days = s / 86400
    return f"{days:,.0f} days" if days < 10 ** BIG_DIGITS else f"{days:.2e} days"


# ---- refusing what does not fit ------------------------------------------------------------
def require_fits(estimate: Estimate, what: str, *, device: str = "cpu", available: int | None = None,
                 change: str = "") -> None:
    """ConfigError, before any work, when ``estimate`` needs more memory than ``device`` has:
    one line with both sizes, what dominates and what to lower (``change``, else the
    estimate's own ``change``, else its ``lower`` parameters)."""
    available = device_memory(device) if available is None else available
    if available is None or estimate.peak_bytes <= available:
        return
    hint = change or estimate.change or (f"lower {' or '.join(estimate.lower)}" if estimate.lower else "")
    raise ConfigError(f"{what} needs about {format_bytes(estimate.peak_bytes)} of memory "
                      f"({shorten_numbers(estimate.what, FULL_DIGITS)}); "
                      f"{device} has {format_bytes(available)}" + (f": {hint}" if hint else ""))


def largest_fitting(estimate_of: Callable[[Any], Estimate], params: Any, name: str, available: float) -> int | None:
    """The largest value v <= params.<name> of an integer parameter for which
    ``estimate_of(params.replace(name=v))`` fits in ``available`` bytes (bisection from the
    smallest of 1..8 that is valid and fits; the estimate is taken to grow with the
    parameter); None when none of those fits or the parameter is not an integer."""
    hi = getattr(params, name, None)
    if isinstance(hi, bool) or not isinstance(hi, int) or hi < 1:
        return None

    def fits(v: int) -> bool:
        try:
            return estimate_of(params.replace(**{name: v})).peak_bytes <= available
        except AttnlabError:
            return False

    lo = next((v for v in range(1, min(hi, 8) + 1) if fits(v)), None)  # the smallest valid value that fits
    if lo is None:
        return None
    # fits(lo) holds; the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def fitting_hint(estimate_of: Callable[[Any], Estimate], params: Any, estimate: Estimate,
                 available: float) -> str:
    """"lower H (H <= 95 fits)": the first of ``estimate.lower`` with a value that fits, else
    the estimate's ``change`` or the names of ``lower``."""
    for name in estimate.lower:
        v = largest_fitting(estimate_of, params, name, available)
        if v is not None and v < getattr(params, name):
            return f"lower {name} ({name} <= {v} fits)"
    return estimate.change or (f"lower {' or '.join(estimate.lower)}" if estimate.lower else "")


# ---- this machine's rates ------------------------------------------------------------------
def rate(kind: str) -> float:
    """Work per second of ``kind`` on this machine (measured once per process, :func:`rates`)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of work {kind!r}; one of {', '.join(KINDS)}")
    return _RATES[kind]()


def rates() -> dict[str, float]:
    """{kind: work per second} for every kind, measured on first use and cached."""
    return {k: rate(k) for k in KINDS}


def _timed(fn: Callable[[], Any], repeats: int = 5) -> float:
    """The best of ``repeats`` timings of ``fn()`` on one BLAS thread, after one untimed call (page
    faults): on shared cores single timings scatter by 10x, their minimum much less, and a
    multi-threaded kernel's by 100x (module docstring)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        fn()
        best = math.inf
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
    return max(best, 1e-9)


@functools.cache
def _gemm_rate() -> float:
    import numpy as np

    a = np.random.default_rng(0).standard_normal((512, 512))
    return matmul_flops(512, 512, 512) / _timed(lambda: a @ a)


@functools.cache
def _lapack_rate() -> float:
    import numpy as np

    a = np.random.default_rng(0).standard_normal((512, 256))
    return qr_flops(512, 256, q=True) / _timed(lambda: np.linalg.qr(a))


@functools.cache
def _memory_rate() -> float:
    import numpy as np

    a = np.ones(4 * 2 ** 20)  # 32 MiB
    b = np.empty_like(a)
    return 2 * a.nbytes / _timed(lambda: np.copyto(b, a))


@functools.cache
def _arb_rate() -> float:
    try:
        import flint
    except ImportError:  # no ball arithmetic here: nothing that counts arb work can run
        return 1e8
    old = flint.ctx.prec
    flint.ctx.prec = 256
    try:
        k = 96
        a = flint.arb_mat(k, k, [flint.arb(1 + (i % 97) / 97) for i in range(k * k)])
        return matmul_flops(k, k, k) / _timed(lambda: a * a)
    finally:
        flint.ctx.prec = old


@functools.cache
def _python_rate() -> float:
    try:
        import flint
    except ImportError:  # no ball arithmetic: a loop over floats
        flint = None
    xs = [1.0 + i / 2000 for i in range(2000)]

    def loop(xs=xs, zero=0.0):
        acc = zero
        for x in xs:
            acc = acc + x * x
        return acc

    if flint is None:
        return 2 * len(xs) / _timed(loop)
    old = flint.ctx.prec
    flint.ctx.prec = 256
    try:
        balls = [flint.arb(x) for x in xs]
        return 2 * len(xs) / _timed(lambda: loop(balls, flint.arb(0)))
    finally:
        flint.ctx.prec = old


@functools.cache
def _call_rate() -> float:
    import numpy as np

    a = np.random.default_rng(0).standard_normal((32, 64))
    return 1.0 / _timed(lambda: np.linalg.svd(a))


_RATES: Mapping[str, Callable[[], float]] = {"gemm": _gemm_rate, "lapack": _lapack_rate,
                                             "traffic": _memory_rate, "arb": _arb_rate, "python": _python_rate,
                                             "calls": _call_rate}


# ---- one GPU, rated -------------------------------------------------------------------------
REFERENCE_GPU = "one H100-class GPU (rated)"
GPU_RATES = {"gemm": 2.5e13, "lapack": 1.0e12, "traffic": 2.0e12, "calls": 1.0e4}
"""Rates of one data-centre GPU, rated from its published figures rather than measured here
(no GPU is needed to print them): products at 25 TFLOP/s (H100 SXM: 67 TFLOP/s float32 and
float64 on its tensor cores at peak; small and float32 products run well below it),
factorizations at 1 TFLOP/s (cuSOLVER on matrices of a few thousand rows), element-wise
traffic at 2 TB/s (3.35 TB/s of HBM3 at peak), and a small call at 100 us: a torch operation on
small tensors (0.1 call) costs about 10 us of launch and dispatch on the host, however little
it computes. Ball arithmetic and interpreted loops run on the host's CPU and keep this
machine's rates. Where a run is made of many small operations (the memorization searches,
tens of thousands of steps of a few hundred small kernels) the GPU's time is the launches'."""


def gpu_seconds(e: Estimate) -> float | None:
    """The estimate's time on :data:`REFERENCE_GPU`: each kind over :data:`GPU_RATES` (arb and
    python work at this machine's rates); None when part of it is ``timed`` (seconds measured
    on this CPU, which no rate converts)."""
    if e.timed > 0:
        return None
    return sum(getattr(e, k) / GPU_RATES.get(k, rate(k)) for k in KINDS if getattr(e, k) > 0)


def total(parts: Sequence[Estimate], what: str | None = None) -> Estimate:
    """Steps run one after another: the largest peak, the work summed; ``what`` names the
    step with the largest peak unless given; the time is a bound when any step's is."""
    if not parts:
        raise ValueError("total() needs at least one estimate")
    top = max(parts, key=lambda e: e.peak_bytes)
    bounds = list(dict.fromkeys(p.time_bound for p in parts if p.time_bound))
    return Estimate(top.peak_bytes, what or top.what, *(sum(getattr(p, k) for p in parts) for k in KINDS),
                    lower=top.lower, change=top.change, time_bound="; ".join(bounds),
                    timed=sum(p.timed for p in parts))


__all__ = ["ANNOUNCE_SECONDS", "Estimate", "ONE_CORE", "GPU_RATES", "GiB", "KINDS", "REFERENCE_GPU", "fitting_hint",
           "format_bytes", "format_seconds", "gpu_seconds", "largest_fitting", "matmul_flops", "qr_flops", "rate", "rates", "require_fits", "svd_flops", "total"]
