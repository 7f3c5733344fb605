"""``attnlab bench``: speed and memory of every attention variant against PyTorch's fused kernels.

registry.py  the variants, each a closure over q, k, v (B=1, H=8, n, d_head=64)
timing.py    warm-up, repeats, median and IQR, thread count, gc between repeats
memory.py    peak memory of one forward (resident-set high-water mark)
ceiling.py   the matmul GFLOP/s ceiling, measured in the same run
flops.py     analytic FLOPs per variant (formulas in its docstring)
run.py       the sweep over n, rows with ratios to fused SDPA, memory repeated until its verdict is stable
stability.py a memory slope's verdict from repeated rounds: decided, or "inconclusive: noisy"
targets.py   crossover n per variant, memory slopes, the targets
report.py    table rows and figure specs of a result
record.py    a result (bench.json) read back typed: rows, crossovers, targets
"""

from attnlab.bench.variants import VARIANTS, Variant, get_variant
from attnlab.bench.run import PRESETS, BenchConfig, BenchResult, parse_n_list, run_bench

__all__ = ["PRESETS", "VARIANTS", "BenchConfig", "BenchResult", "Variant", "get_variant", "parse_n_list",
           "run_bench"]
