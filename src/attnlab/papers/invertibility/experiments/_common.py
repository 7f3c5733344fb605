"""Shared by the invertibility experiments: case strings, and one measured case of A (float64
spectrum, high-precision sigma_min, certified rank) as a dict of plain numbers."""

from __future__ import annotations

import math
import time

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.construction import MAX_ROWS, InvertibilityParams, build_case, certify_case
from attnlab.papers.invertibility.matrix import rank_cap
from attnlab.papers.invertibility.spectrum import float_spectrum, sigma_min_high_precision

CPU_ONLY = ("float64 SVDs of small dense matrices and Arb ball arithmetic (python-flint), which run on the CPU "
            "only")


def parse_cases(name: str, values, parts: int) -> tuple[tuple[int, ...], ...]:
    """Cases written "N:L:d" (parts = 3) or "N:L" (parts = 2) as integer tuples; ConfigError otherwise."""
    form = ":".join("NLd"[:parts])
    try:
        values = tuple(values)
    except TypeError:
        raise ConfigError(f"{name} must list cases written {form}, got {values!r}") from None
    out = []
    for v in values:
        try:
            case = tuple(int(x) for x in str(v).split(":"))
        except ValueError:
            raise ConfigError(f"{name}: {v!r} is not {form} with integers, e.g. {':'.join(['2', '4', '4'][:parts])}") \
                from None
        if len(case) != parts or case[0] < 1 or case[1] < 2 or (parts == 3 and case[2] < 1):
            raise ConfigError(f"{name}: {v!r} must be {form} with N >= 1, L >= 2" + (", d >= 1" if parts == 3 else ""))
        if case[0] ** case[1] > MAX_ROWS:
            raise ConfigError(f"{name}: {v!r} has N^L = {case[0] ** case[1]} rows, more than {MAX_ROWS}; lower N or L")
        out.append(case)
    if not out:
        raise ConfigError(f"{name} must list at least one case written {form}")
    return tuple(out)


def minimal_theorem_heads(N: int, L: int, d: int) -> int:
    """P = ceil(N^L / d): the fewest heads with Pd >= N^L (the theorem's hypothesis)."""
    return math.ceil(N ** L / d)


def measure_case(N: int, L: int, d: int, P: int, w: float, *, embedding: str = "explicit", seed: int = 0,
                 high_precision: bool = True, certify: bool = True) -> dict:
    """One A: its float64 spectrum, sigma_min in high precision (when A has full rank min(N^L, Pd)
    by its cap) and its certified rank, with the tolerances behind each."""
    start = time.perf_counter()
    case = build_case(InvertibilityParams(N=N, L=L, d=d, P=P, embedding=embedding, w=w, seed=seed, certify=False))
    T, cols = N ** L, P * d
    m = min(T, cols)
    cap = rank_cap(N, L, d, P)
    fs = float_spectrum(case.A)
    s1 = math.log10(fs.sigma[0])
    row = dict(N=N, L=L, d=d, P=P, w=w, rows=T, cols=cols, m=m, cap=cap, theorem=cols >= T,
               float_rank=fs.rank, float_tol=fs.tol, log10_sigma_max=s1,
               float_log10_ratio=fs.log10_ratio(), float_resolved=fs.resolved(),
               float_log10_ratio_cap=fs.log10_ratio(cap), float_log10_ratio_next=(fs.log10_ratio(cap + 1)
                                                                                   if cap < m else None),
               resolution_log10=math.log10(fs.resolution), hp_log10_sigma_min=None, hp_log10_ratio=None, hp_bits=None,
               cert_lower=None, cert_upper=None, cert_bits=None)
    if high_precision and cap == m:
        hp = sigma_min_high_precision(case.arb_matrix)
        row.update(hp_bits=hp.bits, hp_log10_sigma_min=hp.log10_sigma_min,
                   hp_log10_ratio=None if hp.log10_sigma_min is None else hp.log10_sigma_min - s1)
    if certify:
        cert = certify_case(case)
        row.update(cert_lower=cert.lower, cert_upper=min(cert.upper, cap), cert_bits=cert.prec)
    row["log10_ratio"] = row["hp_log10_ratio"] if row["hp_log10_ratio"] is not None else (
        row["float_log10_ratio"] if row["float_resolved"] else None)
    row["seconds"] = time.perf_counter() - start
    return row


def ratio_text(r: dict) -> str:
    """log10 sigma_min/sigma_max as table text: high precision if computed, else float64 or its label."""
    if r["hp_log10_ratio"] is not None:
        return f"{r['hp_log10_ratio']:.2f} ({r['hp_bits']} bits)"
    if r["float_resolved"]:
        return f"{r['float_log10_ratio']:.2f} (float64)"
    if r["hp_bits"] is not None:
        return f"below float resolution (< {r['resolution_log10']:.1f}); not resolved at {r['hp_bits']} bits"
    return f"below float resolution (< {r['resolution_log10']:.1f})"


def float_ratio_text(r: dict) -> str:
    return f"{r['float_log10_ratio']:.2f}" if r["float_resolved"] else \
        f"below float resolution ({r['float_log10_ratio']:.1f} is round-off)"


def cert_text(r: dict) -> str:
    if r["cert_lower"] is None:
        return "-"
    if r["cert_lower"] == r["cert_upper"]:
        return f"{r['cert_lower']} ({r['cert_bits']} bits)"
    return f"[{r['cert_lower']}, {r['cert_upper']}]"
