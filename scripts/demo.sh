#!/usr/bin/env bash
# `make demo`: compiles the bundled dynamic model (examples/demo/demo.onnx: an If and a
# data-dependent Loop over a variable-length sequence) ONCE with vmc, then runs that one
# .vmexe with vmrun at several sequence lengths: the lengths with reference outputs are
# checked against them, every length is timed.
#   usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VMC="$BUILD/tools/vmc"
VMRUN="$BUILD/tools/vmrun"
OUT="$BUILD/demo"
mkdir -p "$OUT"

echo "== compile once: vmc examples/demo/demo.onnx --dim seq=1..4096"
"$VMC" "$ROOT/examples/demo/demo.onnx" -o "$OUT/demo.vmexe" --dim seq=1..4096
"$VMRUN" "$OUT/demo.vmexe" --info | sed -n '1,12p'

echo
echo "== run the same executable at several lengths (references: ONNX Runtime / numpy)"
for seq in 1 7 64; do
  ref="$ROOT/examples/demo/reference/seq_$seq"
  rm -rf "$OUT/seq_$seq"
  "$VMRUN" "$OUT/demo.vmexe" --input "x=$ref/inputs/x.npy" --output-dir "$OUT/seq_$seq" >/dev/null
  /usr/bin/python3 - "$OUT/seq_$seq" "$ref/outputs" "$seq" <<'PY'
import sys, numpy as np
out, ref, seq = sys.argv[1], sys.argv[2], sys.argv[3]
worst = 0.0
for name in ("y", "steps", "deltas"):
    got, want = np.load(f"{out}/{name}.npy"), np.load(f"{ref}/{name}.npy")
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    err = np.abs(got.astype(np.float64) - want) / (1e-4 + 1e-3 * np.abs(want))
    worst = max(worst, float(err.max()) if err.size else 0.0)
    assert worst <= 1.0, f"{name} differs from the reference"
steps = int(np.load(f"{out}/steps.npy"))
print(f"seq={seq:>4}: y {np.load(out + '/y.npy').shape}, {steps} refinement steps -- matches the reference")
PY
done
echo
echo "== timings of the one executable (random inputs, 20 runs after a warm-up)"
for seq in 1 64 512 4096; do
  printf 'seq=%4s: ' "$seq"
  "$VMRUN" "$OUT/demo.vmexe" --input "x=${seq}x16:f32" --repeat 20 | grep '^latency'
done
echo
echo "Compile your own model:  $VMC model.onnx -o model.vmexe --dim NAME=LO..HI"
echo "Run it:                  $VMRUN model.vmexe --input NAME=file.npy --output-dir out/"
