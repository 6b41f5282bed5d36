#!/usr/bin/env bash
# What a session lent a GPU runs for issue 51, in one go: every test that has a CUDA
# path, then the GPU benchmark. Writes under $OUT (default ./gpu-results):
# gpu_name.txt, cuda_tests.txt, gpu.txt, gpu.json (its "goals" section: issue 51's
# bars beside the figures, each met or not). Meant for a machine whose python3 has
# torch with CUDA and pytest; the package is read from src/ (no install).
#
# It ends within about 9.5 minutes (the device tool's limit for one command is 10):
# the tests get 4 minutes (each at most 90 s, where pytest-timeout is there), the
# benchmark 5.5; the benchmark prints and saves each section as it ends and compiles
# last, so what a time limit stops keeps every section before it; a section that fails
# (a graph capture) is an error row, and the benchmark goes on in a new process.
#
#     OUT=/tmp/gpu bash benchmarks/gpu_session.sh
set -u
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total --format=csv > "$OUT/gpu_name.txt" 2>&1
# every test that skips without CUDA is in these files; -k keeps their CUDA ones (and
# the CPU-side graph checks), not the rest of test_precision/test_step_api/test_bench
CUDA_TESTS="tests/test_cuda_graph.py tests/test_graph_training.py tests/test_precision.py
            tests/test_bench.py tests/test_step_api.py tests/test_gpu_benchmark.py
            tests/test_examples.py"
# a test past 80 s has every thread's traceback written to the file (pytest's own
# faulthandler), and is stopped at 90 s where pytest-timeout is there
PER_TEST="-o faulthandler_timeout=80"
python3 -c "import pytest_timeout" 2>/dev/null && PER_TEST="$PER_TEST --timeout 90"
# shellcheck disable=SC2086  # the lists split on purpose
# -v, unbuffered: each test's outcome is in the file as it ends, should the limit stop
# the run before pytest's summary
PYTHONUNBUFFERED=1 timeout 240 python3 -m pytest -v -p no:xdist -p no:cacheprovider \
    -o addopts="" -rfEs --durations 15 $PER_TEST -k "cuda or graph or gpu" $CUDA_TESTS \
    > "$OUT/cuda_tests.txt" 2>&1
echo "cuda tests: exit $?" | tee -a "$OUT/cuda_tests.txt"
# the verdict on the console too (the device tool returns its tail): each failure and
# pytest's count, then the benchmark's goals
grep -E "^(FAILED|ERROR) |^=+ .*(passed|failed|error).* =+$" "$OUT/cuda_tests.txt" | tail -n 60
PYTHONUNBUFFERED=1 timeout 330 python3 benchmarks/gpu.py --json "$OUT/gpu.json" \
    > "$OUT/gpu.txt" 2>&1
echo "gpu benchmark: exit $?" | tee -a "$OUT/gpu.txt"
sed -n '/^## goals$/,/^$/p' "$OUT/gpu.txt"
