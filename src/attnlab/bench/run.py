"""The benchmark sweep: every variant at every n, timed, sized and compared with fused SDPA.

For each n: q, k, v of shape (B=1, H=8, n, d_head=64), drawn from a seeded
generator in the requested dtype; the matmul ceiling (ceiling.py) is measured
first in the same run. For each variant: build (outside the timing), time one
forward (timing.py), measure the peak memory of one forward (memory.py), count
its FLOPs (flops.py). Rows carry the median and quartiles in ms (no quartiles from one
repeat: no spread is known), GFLOP/s, % of the ceiling, the peak in MiB and ``ratio`` =
time / time of fused SDPA of the same causality at the same n (< 1: faster than the
fused kernel).

The memory targets judge a log-log slope over n, which one peak per n leaves to the
allocator's noise: after the sweep, the variants those targets judge are measured again,
one round (one peak per n) at a time, until their slope's verdict is decided or the
rounds run out (stability.py); ``peak_mb_rounds`` holds every round and ``peak_mb`` their
median.

Variants that materialise n x n matrices (``explicit``) are skipped above
``max_explicit_n`` (memory: at n = 16384, 8 heads, float32 one n x n tensor is
8 GiB). A variant whose operator is missing is "unavailable", one that cannot run
at a size is "skipped", one that raises is "failed": the sweep goes on.
Crossovers and targets: targets.py.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import statistics
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from attnlab.bench.ceiling import matmul_ceiling
from attnlab.bench.memory import peak_memory
from attnlab.bench.variants import VARIANTS, BuildContext, Skipped, Unavailable, _shape, get_variant
from attnlab.bench.stability import MAX_ROUNDS, peak_rounds, wants_rounds
from attnlab.bench.targets import crossovers, evaluate_targets, memory_slopes, memory_target_variants, memory_verdicts
from attnlab.bench.timing import time_call
from attnlab.config import (Config, check_choice, check_device, check_fits, check_int, check_ints, check_seed,
                            device_memory)
from attnlab.errors import ConfigError
from attnlab.runs.threads import num_threads

PRESETS = {"full": (512, 1024, 2048, 4096, 8192, 16384), "quick": (512, 1024, 2048, 4096)}
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}
Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class BenchConfig(Config):
    """n: sequence lengths; variants: names (None: all); dtype: float32, float64 or bfloat16;
    threads: torch threads (None: torch's default); repeats, warmup: timed and warm-up
    calls; B, H, d_head: the shape of q, k, v; max_explicit_n: largest n for variants
    that materialise n x n; memory: measure peak memory; ceiling_N: size of the
    ceiling matmul (None: 2048 on the CPU, 8192 on CUDA, where a 2048^3 product lasts
    about 20 us and the timer would read launch latency, not the matmul rate); seed: for q, k, v and the variants' random parts; device: cpu, cuda
    or cuda:N (timings synchronise the device; peak memory is the allocator's on CUDA)."""

    n: tuple[int, ...] = PRESETS["full"]
    variants: tuple[str, ...] | None = None
    dtype: str = "float32"
    threads: int | None = None
    repeats: int = 5
    warmup: int = 1
    B: int = 1
    H: int = 8
    d_head: int = 64
    max_explicit_n: int = 8192
    memory: bool = True
    ceiling_N: int | None = None
    seed: int = 0
    device: str = "cpu"

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """n: sorted distinct lengths; variants: the names once each, in the order given."""
        v = super().normal_form(values)
        if not isinstance(v["n"], (list, tuple)):
            raise ConfigError(f"n must be a non-empty list of sequence lengths, got {v['n']!r}")
        v["n"] = tuple(sorted(set(check_ints("n (sequence lengths)", v["n"], minimum=1))))
        if v["variants"] is not None:
            v["variants"] = tuple(dict.fromkeys(v["variants"]))
        return v

    def validate(self) -> None:
        if self.variants is not None:
            if not self.variants:
                raise ConfigError("variants must name at least one variant (or be left unset for all)")
            for name in self.variants:
                get_variant(name)  # UnknownNameError naming the choices
        check_choice("dtype", self.dtype, DTYPES)
        if self.threads is not None:
            check_int("threads", self.threads, minimum=1)
        for name, least in (("repeats", 1), ("warmup", 1), ("B", 1), ("H", 1), ("d_head", 1),
                            ("max_explicit_n", 1)):
            check_int(name, getattr(self, name), minimum=least)
        if self.ceiling_N is not None:
            check_int("ceiling_N", self.ceiling_N, minimum=16)
        check_seed(self.seed)
        check_device(self.device)

    @property
    def variant_names(self) -> tuple[str, ...]:
        return self.variants if self.variants is not None else tuple(VARIANTS)


@dataclass
class BenchResult:
    config: dict
    env: dict
    ceiling: dict
    rows: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"config": self.config, "env": self.env, "ceiling": self.ceiling, "rows": self.rows,
                "crossovers": crossovers(self.rows), "memory_slopes": memory_slopes(self.rows),
                "targets": evaluate_targets(self.rows)}


def environment(threads: int, device: str = "cpu") -> dict:
    """Versions, processor, threads, load and the device (its name and CUDA version on a GPU)."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    env = {"torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
           "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "threads": threads, "load_average_1m": load[0], "load_average_5m": load[1], "device": device,
           "device_name": platform.processor() or platform.machine()}
    if device.startswith("cuda"):
        env["device_name"] = torch.cuda.get_device_name(torch.device(device))
        env["cuda"] = torch.version.cuda
    return env


def make_qkv(cfg: BenchConfig, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v: (B, H, n, d_head), standard normal, seeded by (seed, n) on the CPU (the same
    numbers on every device), then moved to the bench's device."""
    g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + n)
    shape = (cfg.B, cfg.H, n, cfg.d_head)
    return tuple(torch.randn(shape, generator=g).to(device=cfg.device, dtype=DTYPES[cfg.dtype])  # type: ignore
                 for _ in range(3))


def check_memory(cfg: BenchConfig, available: int | None = None) -> None:
    """ConfigError, before anything runs, when the largest n cannot fit: every variant holds
    q, k, v and its output, 4 B H n d_head elements, and its working set is at least as large
    again; the n x n variants stop at ``max_explicit_n``."""
    available = device_memory(cfg.device) if available is None else available
    if available is None:
        return
    n = max(cfg.n)
    need = 8 * cfg.B * cfg.H * n * cfg.d_head * DTYPES[cfg.dtype].itemsize
    check_fits(f"--n {n} (q, k, v, outputs and working memory at B={cfg.B}, H={cfg.H}, d_head={cfg.d_head}, "
               f"{cfg.dtype})", need, device=cfg.device, available=available,
               change=f"give every --n below {max(1, n * available // need)}")


def run_bench(cfg: BenchConfig, progress: Progress | None = None) -> BenchResult:
    """Measure every (variant, n) of ``cfg``; see the module docstring."""
    check_memory(cfg)
    dtype = DTYPES[cfg.dtype]
    names = cfg.variant_names
    # references are measured even when not asked for: every ratio needs them
    wanted = {"sdpa", *(VARIANTS[v].reference for v in names)}
    order = [v for v in VARIANTS if v in wanted or v in names]
    total, done = len(order) * len(cfg.n) + 1, 0
    if progress:
        progress("matmul ceiling", done, total)
    with num_threads(cfg.threads) as threads, _compile_cache_room(len(cfg.n)):
        ceiling_N = cfg.ceiling_N or (8192 if str(cfg.device).startswith("cuda") else 2048)
        c = matmul_ceiling(N=ceiling_N, dtype=dtype, threads=threads, device=cfg.device, seed=cfg.seed)
        result = BenchResult(_config_dict(cfg), environment(threads, cfg.device), dataclasses.asdict(c))
        for n in cfg.n:
            q, k, v = make_qkv(cfg, n)
            for name in order:
                done += 1
                if progress:
                    progress(f"{name} n={n}", done, total)
                row = measure_variant(VARIANTS[name], q, k, v, cfg, threads, c.gflops)
                row["requested"] = name in names
                result.rows.append(row)
            del q, k, v
        _add_ratios(result.rows)
        if cfg.memory:
            settle_memory(cfg, result.rows, progress)
    result.env["load_average_1m_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return result


@contextmanager
def _compile_cache_room(sizes: int) -> Iterator[None]:
    """torch.compile specialises FlexAttention on each n; past dynamo's recompile limit
    (8) it silently falls back to eager flex_attention, which materialises the n x n
    scores (an out-of-memory kill at n = 16384). Room for every (variant, n) here."""
    import torch._dynamo as dynamo

    name = "recompile_limit" if hasattr(dynamo.config, "recompile_limit") else "cache_size_limit"
    before = getattr(dynamo.config, name)
    setattr(dynamo.config, name, max(before, 4 * sizes + 8))
    try:
        yield
    finally:
        setattr(dynamo.config, name, before)


def settle_memory(cfg: BenchConfig, rows: list[dict], progress: Progress | None = None) -> None:
    """More rounds of peak memory for the variants the memory targets judge, one round (every n) at a
    time, while :func:`attnlab.bench.stability.wants_rounds` asks for one (module docstring). Each
    round rebuilds the variant on the same seeded q, k, v and calls it once before measuring, as the
    sweep measured after timing. A variant that raises keeps the rounds it has."""
    judged = list(dict.fromkeys(sum(memory_target_variants(rows).values(), [])))
    dropped: set[str] = set()
    for extra in range(1, MAX_ROUNDS):
        verdicts = memory_verdicts(rows, [k for k in judged if k not in dropped])
        names = [k for k, v in verdicts.items()
                 if wants_rounds(v) and min(len(peak_rounds(r)) for r in _ok_rows(rows, k)) < MAX_ROUNDS]
        if not names:
            return
        done, total = 0, len(names) * len(cfg.n)
        for n in cfg.n:
            q, k, v = make_qkv(cfg, n)
            for name in names:
                done += 1
                row = next((r for r in _ok_rows(rows, name) if r["n"] == n), None)
                if row is None or name in dropped:
                    continue
                if progress:
                    progress(f"memory round {extra + 1} (at most {MAX_ROUNDS}): {name} n={n}", done, total)
                try:
                    fn = VARIANTS[name].build(q, k, v, BuildContext(seed=cfg.seed))
                    fn()
                    peak = peak_memory(fn, device=cfg.device).mb
                except Exception:  # a variant failing must not end the benchmark
                    dropped.add(name)
                    continue
                row["peak_mb_rounds"] = [*peak_rounds(row), peak]
                row["peak_mb"] = _median(row["peak_mb_rounds"])
            del q, k, v


def _ok_rows(rows: list[dict], name: str) -> list[dict]:
    return [r for r in rows if r["variant"] == name and r["status"] == "ok"]


def _median(xs: list[float | None]) -> float | None:
    known = [x for x in xs if x is not None]
    return statistics.median(known) if known else None


def _config_dict(cfg: BenchConfig) -> dict:
    d = dataclasses.asdict(cfg)
    d["variants"] = list(cfg.variant_names)
    return d


def measure_variant(var, q, k, v, cfg: BenchConfig, threads: int, ceiling_gflops: float) -> dict:
    """One row: status ok/unavailable/skipped/failed with the numbers or the reason."""
    n = q.shape[-2]
    row = {"variant": var.name, "n": n, "causal": var.causal, "order": var.order, "reference": var.reference,
           "masked": var.masked,
           "status": "ok", "note": "", "time_ms": None, "q1_ms": None, "q3_ms": None, "first_call_ms": None,
           "gflop": None, "gflops": None, "pct_ceiling": None, "peak_mb": None, "peak_mb_rounds": None,
           "ratio": None}
    if var.explicit and n > cfg.max_explicit_n:
        return {**row, "status": "skipped",
                "note": f"materialises n x n: skipped above n = {cfg.max_explicit_n} (memory)"}
    ctx = BuildContext(seed=cfg.seed)
    try:
        fn = var.build(q, k, v, ctx)
        t = time_call(fn, repeats=cfg.repeats, warmup=cfg.warmup, threads=threads)
        mem = peak_memory(fn, device=cfg.device) if cfg.memory else None
    except Unavailable as e:
        return {**row, "status": "unavailable", "note": str(e)}
    except (Skipped, ConfigError) as e:  # e.g. a window wider than n
        return {**row, "status": "skipped", "note": str(e)}
    except Exception as e:  # a variant failing must not end the benchmark
        return {**row, "status": "failed", "note": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"}
    flop = var.flops(_shape(q), ctx)
    gflops = flop / t.median_s / 1e9
    spread = len(t.times) > 1  # one repeat has no quartiles
    return {**row, "time_ms": 1e3 * t.median_s, "q1_ms": 1e3 * t.q1_s if spread else None,
            "q3_ms": 1e3 * t.q3_s if spread else None,
            "first_call_ms": 1e3 * t.first_call_s, "gflop": flop / 1e9, "gflops": gflops,
            "pct_ceiling": 100 * gflops / ceiling_gflops,
            "peak_mb": mem.mb if mem is not None else None,
            "peak_mb_rounds": [mem.mb] if mem is not None else None}


def _add_ratios(rows: list[dict]) -> None:
    times = {(r["variant"], r["n"]): r["time_ms"] for r in rows if r["status"] == "ok"}
    for r in rows:
        ref = times.get((r["reference"], r["n"]))
        if r["status"] == "ok" and ref:
            r["ratio"] = r["time_ms"] / ref


def parse_n_list(text: str) -> tuple[int, ...]:
    """'512,1024,2048' -> (512, 1024, 2048); ConfigError naming the bad entry."""
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise ConfigError(f"--n takes comma-separated integers like 512,1024,2048; {part!r} is not one") from None
        out.append(check_int("every --n value", value, minimum=1))
    return tuple(out)
