#!/usr/bin/env bash
# What a session lent a GPU runs for issue 51, in one go: every test that has a CUDA
# path, then the GPU benchmark. Writes under $OUT (default ./gpu-results):
# cuda_tests.txt, gpu.txt, gpu.json. Meant for a machine whose python3 has torch with
# CUDA and pytest; the package is read from src/ (no install).
#
#     OUT=/tmp/gpu bash benchmarks/gpu_session.sh            # about 10 minutes on an H100
set -u
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total --format=csv > "$OUT/gpu_name.txt" 2>&1
# every test that skips without CUDA is in these files; -k keeps their CUDA ones (and
# the CPU-side graph checks), not the rest of test_precision/test_step_api/test_bench
CUDA_TESTS="tests/test_cuda_graph.py tests/test_graph_training.py tests/test_precision.py
            tests/test_bench.py tests/test_step_api.py tests/test_gpu_benchmark.py"
# shellcheck disable=SC2086  # the list splits on purpose
timeout 300 python3 -m pytest -q -p no:xdist -p no:cacheprovider -o addopts="" -rs \
    -k "cuda or graph or gpu" $CUDA_TESTS > "$OUT/cuda_tests.txt" 2>&1
echo "cuda tests: exit $?" | tee -a "$OUT/cuda_tests.txt"
timeout 420 python3 benchmarks/gpu.py --json "$OUT/gpu.json" > "$OUT/gpu.txt" 2>&1
echo "gpu benchmark: exit $?" | tee -a "$OUT/gpu.txt"
