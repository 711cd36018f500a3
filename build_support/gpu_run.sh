#!/usr/bin/env bash
# gpu_run.sh - one GPU session in one command (issue 38): build pygpu for this machine's
# Python and GPU, then the checks and figures docs/cuda.md asks for, each step under a
# time limit so that one hang cannot eat the session, each step's output in its own log.
#
#   bash build_support/gpu_run.sh [STEP ...]      # default: all of them, in this order
#     build      the core and the CUDA plugin in place (PYGPU_CUDA=1, sm_90 unless
#                PYGPU_CUDA_ARCHS says otherwise), then check_cuda_plugin
#     selftest   python -m pygpu.selftest --device cuda:0
#     sanitize   compute-sanitizer --tool memcheck on the selftest's ops group
#     pytest     pytest --device cuda -n $JOBS tests (pytest-xdist; serial without it)
#     bench      benchmarks/bench_cuda.py against PyTorch on the same GPU, with a kernel
#                profile of every row (pygpu.profiler) in $OUT/profile/
#
# Environment: PY (python3: the interpreter with PyTorch and the test extras; the first
# H200 run used CPython 3.12 and torch 2.11+cu130), OUT ($PWD/gpu_out: logs, bench.json,
# profiles, summary.txt), JOBS (14), PYGPU_CUDA_ARCHS (90). cuBLAS comes from the toolkit or
# the nvidia-cublas wheel; the wheel's lib/ joins LD_LIBRARY_PATH. The budget (about 10
# minutes of device time): build 4, selftest 1, sanitize 1.5, pytest 3, bench 3 minutes at
# most; the first run took 108 s for pytest. Run `build pytest` and `bench` as two commands
# where one command may last 10 minutes. Exit status: the number of steps that failed.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-python3}
OUT=${OUT:-$PWD/gpu_out}
JOBS=${JOBS:-14}
export PYGPU_CUDA=1 PYGPU_CUDA_ARCHS=${PYGPU_CUDA_ARCHS:-90} PYGPU_WERROR=${PYGPU_WERROR:-1}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build selftest sanitize pytest bench)

# the cuBLAS wheel's libraries (nvidia/cu13/lib or nvidia/cublas/lib), when it is installed
wheel_lib=$("$PY" - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
for root in nvidia.__path__:
    for d in sorted(glob.glob(os.path.join(root, "*", "lib"))):
        if glob.glob(os.path.join(d, "libcublas.so*")):
            print(d)
            raise SystemExit
EOF
)
[ -n "$wheel_lib" ] && export LD_LIBRARY_PATH="$wheel_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

failed=0
run() {  # run NAME SECONDS COMMAND...: the command's output in $OUT/NAME.log, a summary line
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    local line="$name: rc=$rc, $((SECONDS - t0)) s (limit $limit s): $*"
    echo "$line" | tee -a "$OUT/summary.txt"
    tail -n 3 "$OUT/$name.log"
    [ $rc -ne 0 ] && failed=$((failed + 1))
    return $rc
}

{
    echo "== $(date -u +%FT%TZ) $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
    "$PY" -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, torch.cuda.is_available())" 2>&1
    command -v nvcc >/dev/null && nvcc --version | tail -n 2
} | tee -a "$OUT/summary.txt"

xdist=()
"$PY" -c "import xdist" 2>/dev/null && xdist=(-n "$JOBS")

for step in "${steps[@]}"; do
    case $step in
    build)
        run build 240 "$PY" setup.py -q build_ext --inplace &&
            run check_plugin 30 "$PY" build_support/check_cuda_plugin.py pygpu/_cuda_backend.so
        ;;
    selftest)
        run selftest 60 "$PY" -m pygpu.selftest --device cuda:0
        ;;
    sanitize)
        if command -v compute-sanitizer >/dev/null; then
            run sanitize 90 compute-sanitizer --tool memcheck --error-exitcode 1 \
                "$PY" -m pygpu.selftest --device cuda:0 --only ops
        else
            echo "sanitize: no compute-sanitizer on PATH (skipped)" | tee -a "$OUT/summary.txt"
        fi
        ;;
    pytest)
        # PYTEST_ARGS (e.g. -v, so a run cut short still names what it ran) and the limits
        # PYTEST_LIMIT / BENCH_LIMIT fit the steps into what is left of a session's device time
        # shellcheck disable=SC2086
        run pytest "${PYTEST_LIMIT:-180}" "$PY" -m pytest -q -p no:cacheprovider --device cuda \
            "${xdist[@]}" ${PYTEST_ARGS:-} -o junit_family=xunit2 --junitxml="$OUT/pytest.xml" tests
        ;;
    bench)
        # BENCH_ARGS replaces the default --profile (a kernel profile per row: its time too)
        # shellcheck disable=SC2086
        run bench "${BENCH_LIMIT:-180}" "$PY" benchmarks/bench_cuda.py --json "$OUT/bench.json" \
            ${BENCH_ARGS:---profile "$OUT/profile"}
        ;;
    *)
        echo "gpu_run.sh: unknown step '$step' (build selftest sanitize pytest bench)" >&2
        failed=$((failed + 1))
        ;;
    esac
done
echo "gpu_run.sh: $failed step(s) failed; logs in $OUT" | tee -a "$OUT/summary.txt"
exit "$failed"
