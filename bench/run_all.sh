#!/usr/bin/env bash
# Runs every benchmark of a build folder and prints the derived tables.
set -euo pipefail
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "== vm_dispatch"
"$BUILD/bench/vm_dispatch" --benchmark_format=json --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=false >"$OUT/vm_dispatch.json"
/usr/bin/python3 "$HERE/vm_dispatch_report.py" "$OUT/vm_dispatch.json"
if [ -x "$BUILD/bench/kernels_bench" ]; then
  echo "== kernels_bench"
  OMP_NUM_THREADS=1 "$BUILD/bench/kernels_bench" --benchmark_format=json \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=false >"$OUT/kernels.json"
  /usr/bin/python3 "$HERE/kernels_report.py" "$OUT/kernels.json"
fi
if [ -x "$BUILD/bench/elementwise_bench" ]; then
  echo "== elementwise_bench"
  "$BUILD/bench/elementwise_bench" --benchmark_format=json --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=false >"$OUT/elementwise.json"
  /usr/bin/python3 "$HERE/elementwise_report.py" "$OUT/elementwise.json"
fi
if [ -x "$BUILD/tools/vmbench" ]; then
  echo "== dynamic vs static vs ONNX Runtime (vmbench, through dynamic_vs_static.py)"
  /usr/bin/python3 "$HERE/dynamic_vs_static.py" "$BUILD" --threads 1,2
fi
