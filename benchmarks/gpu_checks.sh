#!/usr/bin/env bash
# Every CUDA check of attnlab, for a machine with an NVIDIA GPU and attnlab installed with the
# CUDA build of PyTorch (README: set-up). Each step can run alone, so that a GPU lent for short
# calls can take them one at a time; every output goes to OUT with the device named.
#
#   bash benchmarks/gpu_checks.sh STEP [OUT]      STEP: tests | bench | linear | reproduce | paper | all
#
#   tests      the whole test suite; the CUDA tests run instead of skipping (pytest.log)
#   bench      every variant against SDPA's backends and FlexAttention, bfloat16, n up to 65536
#              (bench-bf16/bench.json) and float32 up to 16384 (bench-fp32/bench.json)
#   linear     causal and non-causal linear attention against flash at n = 16384 and 65536, bf16
#   reproduce  every paper at quick scale with --device cuda (reproduce-<paper>/report.html)
#   paper      memorization at the paper's scale on one GPU, timed per experiment
#   lease      what fits a lease of about 10 minutes: the benchmarks split per n, alone on the GPU;
#              then the tests that run on CUDA beside the five quick reproductions (2 threads each).
#              Each step has its own time limit, so a cut-off step loses only itself; timeline.txt
#              says when each step ran
set -uo pipefail
STEP=${1:-all}
OUT=${2:-benchmarks/results/cuda}
mkdir -p "$OUT"
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 2)" \
    || { echo "gpu_checks: no CUDA device here; this script is for a GPU machine" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/device.csv"
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())" >> "$OUT/device.csv"

run() { [ "$STEP" = all ] || [ "$STEP" = "$1" ]; }
status=0

if [ "$STEP" = lease ]; then
    t0=$(date +%s)
    mark() { echo "$(( $(date +%s) - t0 )) s  $*" >> "$OUT/timeline.txt"; }
    limit() { local s=$1; shift; timeout -k 5 "$s" "$@"; local rc=$?; [ $rc = 0 ] || status=1; return $rc; }
    mark start
    # 1. the benchmarks alone on the GPU (another process's kernels interleave with timed ones: a
    #    first lease timed sdpa at n = 4096 at 0.50 ms beside two reproductions, 0.115 ms alone)
    for spec in "bfloat16 4096,8192,16384 130" "bfloat16 65536 70" "float32 4096,16384 70"; do
        set -- $spec
        mark "bench $1 n=$2: start"
        limit "$3" attnlab bench --device cuda --dtype "$1" --n "$2" --out "$OUT/bench-$1-${2//,/-}" \
            > "$OUT/bench-$1-${2//,/-}.log" 2>&1
        mark "bench $1 n=$2: exit $?"
    done
    # 2. the five quick reproductions at once beside the tests that run on CUDA
    for paper in transformer-math memorization rank-collapse logic invertibility; do
        ( mark "reproduce $paper: start"
          OMP_NUM_THREADS=2 limit 280 attnlab reproduce "$paper" --device cuda --out "$OUT/reproduce-$paper" \
              > "$OUT/reproduce-$paper.log" 2>&1
          mark "reproduce $paper: exit $?" ) &
    done
    mark "pytest (CUDA files): start"
    limit 200 pytest -n 4 -q -p no:cacheprovider $(grep -rlE "cuda|fake_accelerator" tests --include='test_*.py') \
        > "$OUT/pytest-cuda.log" 2>&1
    mark "pytest: exit $?"
    wait
    mark end
    exit $status
fi

if run tests; then
    pytest -n auto -q 2>&1 | tee "$OUT/pytest.log" || status=1
fi
if run bench; then
    attnlab bench --device cuda --dtype bfloat16 --n 1024,4096,16384,65536 --out "$OUT/bench-bf16" || status=1
    attnlab bench --device cuda --dtype float32 --n 1024,4096,16384 --out "$OUT/bench-fp32" || status=1
fi
if run linear; then
    attnlab bench --device cuda --dtype bfloat16 --n 16384,65536 --variant linear --variant linear-causal \
        --variant sdpa-causal --variant sdpa-flash --out "$OUT/bench-linear" || status=1
fi
if run reproduce; then
    for paper in transformer-math memorization rank-collapse logic invertibility; do
        /usr/bin/time -f "$paper %e s" -a -o "$OUT/reproduce-seconds.txt" \
            attnlab reproduce "$paper" --device cuda --out "$OUT/reproduce-$paper" || status=1
    done
fi
if run paper; then
    /usr/bin/time -f "memorization paper scale %e s" -a -o "$OUT/paper-seconds.txt" \
        attnlab reproduce memorization --scale paper --device cuda --out "$OUT/paper-memorization" || status=1
fi
exit $status
