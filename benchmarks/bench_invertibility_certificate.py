"""Benchmark: the certified rank of Theorem 1's attention matrix A for every N^L <= 1024, on the CPU.

Run by hand (not a test):
    .venv/bin/python benchmarks/bench_invertibility_certificate.py [--max-rows 1024] [--old 256,512] [--threads 2]

Workload (invertibility note, Theorem 1; :mod:`attnlab.papers.invertibility.construction`):
for every (N, L) with N >= 2, L >= 2 and N^L <= --max-rows, the explicit embeddings
c_i = 2^(-m_i) exp(sqrt(p_i)), W_QK^p = w p E_11 with w = 0.1, the largest dimension at
which P = ceil(N^L / d) heads always give full rank, d = min(N + L - 2, N^L) (beyond it the
cap 1 + P (N + L - 2) can fall below N^L), and the minimal number of heads P = ceil(N^L / d),
so Pd >= N^L.
Each case is built (float64 and the Arb enclosure) and ``certify_case`` proves
rank A = N^L: an N^L x N^L minor (the leading columns) certified nonsingular by
``method="auto"`` of :func:`attnlab.analysis.certified_rank.certified_rank` (a ball
determinant up to 256 rows, Rump's ||I - R B||_inf < 1 above). Recorded per case: the
certified bracket, the working precision and every precision tried, the margin
(1 - delta or 1 - D_rad/|D_mid|), log2 of the condition number implied by the residual
(prec + log2 delta), the wall time of build + certificate, and the 1-minute load.

--old SIZES: for the cases with N^L in SIZES, the same certificate by the previous method
(ball determinant, precisions 64, 128, 256, ... bits in turn, ``method="det"``) measured
in the same run, and the ratio old / new. Both run with flint's thread count --threads.

Target: every case in under 60 s on 2 cores. Timings depend on what else runs on the
machine: the load average is recorded beside every time.

Writes benchmarks/results/invertibility_certificate.json and .md; prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

import flint

from attnlab.papers.invertibility.construction import InvertibilityParams, build_case, certify_case

RESULTS = Path(__file__).parent / "results" / "invertibility_certificate.json"
TARGET_SECONDS = 60.0


def cases(max_rows: int = 1024) -> list[tuple[int, int, int, int]]:
    """(N, L, d, P) for every N >= 2, L >= 2 with N^L <= max_rows: d = min(N + L - 2, N^L), P = ceil(N^L / d)."""
    out = []
    for N in range(2, max_rows + 1):
        for L in range(2, 64):
            T = N ** L
            if T > max_rows:
                break
            d = min(N + L - 2, T)
            out.append((N, L, d, math.ceil(T / d)))
    return sorted(out, key=lambda c: (c[0] ** c[1], c[0]))


def run_case(N: int, L: int, d: int, P: int, threads: int, method: str = "auto") -> dict:
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    case = build_case(InvertibilityParams(N=N, L=L, d=d, P=P, w=0.1))
    kwargs = dict(threads=threads)
    if method == "det":
        kwargs.update(method="det", precisions=(64, 128, 256, 512, 1024, 2048, 4096))
    cert = certify_case(case, **kwargs)
    seconds = time.perf_counter() - t0
    T = N ** L
    log2_cond = cert.prec + math.log2(cert.residual) if cert.method == "inverse" and cert.residual > 0 else None
    return dict(N=N, L=L, d=d, P=P, rows=T, cols=P * d, lower=cert.lower, upper=cert.upper,
                full_rank=cert.lower == T, method=cert.method, prec_bits=cert.prec, attempts=list(cert.attempts),
                margin=cert.margin, residual=None if math.isnan(cert.residual) else cert.residual,
                log10_det=None if math.isnan(cert.log10_det) else cert.log10_det, log2_cond=log2_cond,
                float_rank=cert.float_rank, float_ratio=cert.float_ratio, certify_seconds=cert.seconds,
                seconds=seconds, load_before=load, load_after=os.getloadavg()[0])


def machine_info(threads: int) -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python_flint": flint.__version__, "flint_threads": threads,
            "load_avg_1min_start": os.getloadavg()[0]}


def table(out: dict) -> str:
    lines = ["| N | L | d | P | N^L | certified rank | method | bits (tried) | margin | log2 cond | seconds | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in out["results"]:
        cond = "" if r["log2_cond"] is None else f"{r['log2_cond']:.0f}"
        lines.append(f"| {r['N']} | {r['L']} | {r['d']} | {r['P']} | {r['rows']} | {r['lower']}"
                     f"{'' if r['lower'] == r['upper'] else ' .. ' + str(r['upper'])} | {r['method']} | "
                     f"{r['prec_bits']} ({', '.join(map(str, r['attempts']))}) | {r['margin']:.3g} | {cond} | "
                     f"{r['seconds']:.1f} | {r['load_before']:.1f} |")
    if out["old"]:
        lines += ["", "| N | L | N^L | old (det) seconds | old bits (tried) | new seconds | old / new | load |",
                  "|---|---|---|---|---|---|---|---|"]
        for o in out["old"]:
            lines.append(f"| {o['N']} | {o['L']} | {o['rows']} | {o['seconds']:.1f} | {o['prec_bits']} "
                         f"({', '.join(map(str, o['attempts']))}) | {o['new_seconds']:.1f} | {o['ratio']:.2f} | "
                         f"{o['load_before']:.1f} |")
    return "\n".join(lines) + "\n"


def main(max_rows: int = 1024, old_sizes=(), threads: int = 2, only=None, write: bool = True,
         path: Path = RESULTS) -> dict:
    info = machine_info(threads)
    grid = [c for c in cases(max_rows) if only is None or (c[0], c[1]) in only]
    out = {"complete": False, "target_seconds": TARGET_SECONDS, "machine": info, "results": [], "old": []}
    for N, L, d, P in grid:
        r = run_case(N, L, d, P, threads)
        out["results"].append(r)
        print(f"N={N} L={L} d={d} P={P} rows={r['rows']}: rank {r['lower']}..{r['upper']} {r['method']} "
              f"{r['prec_bits']} bits {r['attempts']} {r['seconds']:.1f} s (load {r['load_before']:.1f})", flush=True)
        if N ** L in old_sizes:
            o = run_case(N, L, d, P, threads, method="det")
            o.update(new_seconds=r["seconds"], ratio=o["seconds"] / r["seconds"])
            out["old"].append(o)
            print(f"  old (det): rank {o['lower']} {o['prec_bits']} bits {o['attempts']} {o['seconds']:.1f} s "
                  f"(ratio {o['ratio']:.2f}, load {o['load_before']:.1f})", flush=True)
        if write:
            _write(out, path)
    out["complete"] = True
    info["load_avg_1min_end"] = os.getloadavg()[0]
    times = [r["seconds"] for r in out["results"]]
    out["summary"] = dict(cases=len(times), full_rank=sum(r["full_rank"] for r in out["results"]),
                          max_seconds=max(times, default=0.0), total_seconds=sum(times),
                          over_target=[(r["N"], r["L"]) for r in out["results"] if r["seconds"] > TARGET_SECONDS])
    if write:
        _write(out, path)
    print(table(out))
    print(out["summary"])
    return out


def merge(paths: list[Path], path: Path = RESULTS) -> dict:
    """One table from several runs (--out files): a case measured in a later run replaces
    the earlier row; each row keeps its own load, and the runs' machine records are kept."""
    rows, old, runs = {}, {}, []
    for p in paths:
        run = json.loads(Path(p).read_text())
        runs.append(dict(file=Path(p).name, machine=run["machine"], complete=run["complete"],
                         cases=[[r["N"], r["L"]] for r in run["results"]]))
        rows.update({(r["N"], r["L"]): r for r in run["results"]})
        old.update({(o["N"], o["L"]): o for o in run["old"]})
    order = {(N, L): i for i, (N, L, _, _) in enumerate(cases(1024))}
    out = {"complete": all(r["complete"] for r in runs), "target_seconds": TARGET_SECONDS, "runs": runs,
           "results": sorted(rows.values(), key=lambda r: order[(r["N"], r["L"])]),
           "old": sorted(old.values(), key=lambda r: order[(r["N"], r["L"])])}
    times = [r["seconds"] for r in out["results"]]
    out["summary"] = dict(cases=len(times), all_cases=len(order), full_rank=sum(r["full_rank"] for r in out["results"]),
                          max_seconds=max(times, default=0.0), total_seconds=sum(times),
                          over_target=[(r["N"], r["L"]) for r in out["results"] if r["seconds"] > TARGET_SECONDS],
                          missing=[k for k in order if k not in rows])
    _write(out, path)
    return out


def _write(out: dict, path: Path = RESULTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    path.with_suffix(".md").write_text(table(out))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-rows", type=int, default=1024, help="largest N^L")
    ap.add_argument("--old", default="", help="comma-separated N^L sizes also certified by the old method")
    ap.add_argument("--threads", type=int, default=2, help="flint threads")
    ap.add_argument("--only", default="", help="N,L pairs to run, e.g. 2,10;4,5 (default: all)")
    ap.add_argument("--out", default=str(RESULTS), help="JSON output (the table goes beside it as .md)")
    ap.add_argument("--merge", nargs="*", help="instead of running: merge these --out files into --out, later wins")
    args = ap.parse_args()
    if args.merge:
        out = merge([Path(p) for p in args.merge], Path(args.out))
        print(table(out))
        print(out["summary"])
        raise SystemExit(0)
    only = {tuple(int(x) for x in p.split(",")) for p in args.only.split(";") if p} or None
    main(args.max_rows, tuple(int(s) for s in args.old.split(",") if s), args.threads, only, path=Path(args.out))
