"""Shared by the invertibility experiments' presentation: the departures of the rank sweeps from the
proof's setting (:data:`THEOREM1_DEVIATIONS`, :func:`touched_by`), why they run on the CPU, and a
:class:`attnlab.papers.invertibility.measurement.MeasuredCase`'s numbers as table text."""

from __future__ import annotations

from attnlab.deviations import Deviation
from attnlab.papers.invertibility.measurement import MeasuredCase

# Theorem 1 states that *some* W_QK^p, e and pos make A invertible. A certified rank N^L exhibits such a
# choice whatever the choice is, so these departures from the proof's setting cannot turn a case that
# reaches N^L into one that does not; they touch only a case that misses N^L where the rank cap allows it:
# another choice (the exact transcendental values, a larger w) might reach it, so such a miss decides nothing.
FINITE_W = Deviation(
    "finite-w", "budget", "W_QK^p = w p E_11 at finite w (0.01 to 100) where the proof takes W_11 -> +oo",
    "a limit cannot be computed; full rank at a finite w exhibits the matrices Theorem 1 says exist",
    control="the certified rank at a larger w (--set w_grid=...)")
FLOAT64_VALUES = Deviation(
    "float64-values", "precision", "the embeddings' float64 values taken as exact, where the proof takes "
    "transcendental numbers with property (2)",
    "exact arithmetic on the transcendental numbers is not available; a certified rank of the rounded values "
    "exhibits an embedding (positive entries) for which A is invertible")
THEOREM1_DEVIATIONS = (FINITE_W, FLOAT64_VALUES)
"""The departures of the rank sweeps from the proof's setting; they touch a Theorem 1 row only where a case
misses N^L although its rank cap allows it (:func:`touched_by`)."""


def touched_by(missed_under_cap: bool) -> tuple[str, ...]:
    """The deviations that touch a Theorem 1 row: none when every case reaches N^L or misses it because
    the cap 1 + P (N+L-2) < N^L forbids it for every choice; both otherwise."""
    return tuple(d.id for d in THEOREM1_DEVIATIONS) if missed_under_cap else ()


CPU_ONLY = ("float64 SVDs of small dense matrices and Arb ball arithmetic (python-flint), which run on the CPU "
            "only")


def ratio_text(r: MeasuredCase) -> str:
    """log10 sigma_min/sigma_max as table text: high precision if computed, else float64 or its label."""
    if r.hp_log10_ratio is not None:
        return f"{r.hp_log10_ratio:.2f} ({r.hp_bits} bits)"
    if r.float_resolved:
        return f"{r.float_log10_ratio:.2f} (float64)"
    if r.hp_bits is not None:
        return f"below float resolution (< {r.resolution_log10:.1f}); not resolved at {r.hp_bits} bits"
    return f"below float resolution (< {r.resolution_log10:.1f})"


def float_ratio_text(r: MeasuredCase) -> str:
    """float64's log10 sigma_min/sigma_max as table text, labelled as round-off where unresolved."""
    return f"{r.float_log10_ratio:.2f}" if r.float_resolved else \
        f"below float resolution ({r.float_log10_ratio:.1f} is round-off)"


def cert_text(r: MeasuredCase) -> str:
    """The certified rank as table text: the rank and its bits, its bounds, or "-" when not certified."""
    if r.cert_lower is None:
        return "-"
    if r.cert_lower == r.cert_upper:
        return f"{r.cert_lower} ({r.cert_bits} bits)"
    return f"[{r.cert_lower}, {r.cert_upper}]"
