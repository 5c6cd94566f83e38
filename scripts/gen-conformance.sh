#!/bin/sh
# Copied from the team's shared/conformance/gen.sh (kept in the repo because CI runs on a
# clean checkout without ../shared); `make conformance-data` runs it into
# build-conformance-data/, which tests/conformance/ reads.
# Regenerate the ONNX backend conformance data (node tests + "simple" model tests)
# from Debian's python3-onnx alone (bookworm: onnx 1.12.0, opsets up to 17).
#
#   usage: gen.sh OUTDIR [OP_TYPE]
#
# Writes OUTDIR/node/test_*/{model.onnx,test_data_set_0/{input,output}_N.pb} and
# OUTDIR/simple/test_*/... plus OUTDIR/VERSIONS. OP_TYPE limits node tests to one op.
# The "real" model cases (resnet50 etc.) are only URL stubs (data.json pointing at
# S3) and are dropped. Generation is deterministic (the generators seed numpy).
set -eu
out=${1:?usage: gen.sh OUTDIR [OP_TYPE]}
op=${2:-}
PY=/usr/bin/python3   # never the pyenv python3 on PATH

if ! $PY -E -s -c 'import onnx, numpy' 2>/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "gen.sh: run as root or: apt-get install python3-onnx python3-numpy" >&2; exit 1; }
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-onnx python3-numpy
fi

mkdir -p "$out"
rm -rf "$out/node" "$out/simple" "$out/real"   # generate_data never prunes stale dirs

$PY -E -s - "$out" "$op" <<'EOF'
import argparse, os, shutil, sys, time
import numpy as np
# onnx 1.12's generators use np.float / np.object / np.bool, removed in numpy 1.24.
for name, typ in (("float", float), ("int", int), ("bool", bool), ("object", object),
                  ("str", str), ("complex", complex)):
    if name not in np.__dict__:
        setattr(np, name, typ)
import onnx
from onnx.backend.test import cmd_tools
out, op = sys.argv[1], sys.argv[2] or None
t0 = time.perf_counter()
cmd_tools.generate_data(argparse.Namespace(output=out, op_type=op))
dt = time.perf_counter() - t0
shutil.rmtree(os.path.join(out, "real"), ignore_errors=True)
n = {k: len(os.listdir(os.path.join(out, k))) for k in ("node", "simple") if os.path.isdir(os.path.join(out, k))}
with open(os.path.join(out, "VERSIONS"), "w") as f:
    f.write(f"onnx {onnx.__version__}\nnumpy {np.__version__}\npython {sys.version.split()[0]}\n")
print(f"gen.sh: {n} test cases in {out} (generation {dt:.2f}s)")
EOF
