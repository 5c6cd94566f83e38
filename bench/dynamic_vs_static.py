#!/usr/bin/env python3
"""Dynamic versus static compilation, and dynvm versus ONNX Runtime, for the real models of
the test corpus: a thin wrapper over `vmbench` (tools/vmbench), which does the compiling,
the interleaved rounds and the tables. This file only knows each model's vmc flags and the
sizes worth showing.

  usage: bench/dynamic_vs_static.py [BUILD_DIR] [--threads 1,2] [--repeat N] [--rounds N]
                                    [--models a,b] [--svg-dir DIR]
  ONNX Runtime runs beside them when the peer is installed (vmbench --ort finds
  ../shared/peer/ort_run.mjs); vmbench says so when it is not.
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (model path, vmc flags, [([--sizes specs], {input: fixed int64 value})]). Inputs
# that take a value (Silero's sample rate) are one vmbench run per value.
MODELS = {
    "demo": ("examples/demo/demo.onnx", ["--dim", "seq=1..4096"],
             [(["x={1,64,512,4096}x16"], {})]),
    "ppocrv4_rec": (".models/ppocrv4_rec.onnx",
                    ["--dim", "p2o.DynamicDimension.0=1..8",
                     "--dim", "p2o.DynamicDimension.1=8..2048"],
                    [(["x=1x3x48x{100,320,960}", "x=4x3x48x320"], {})]),
    # The detector, compiled with no flags (N, H, W symbolic).
    "ppocrv4_det": (".models/ppocrv4_det.onnx", [],
                    [(["x=1x3x96x160", "x=1x3x320x320", "x=1x3x480x640"], {})]),
    # ONE executable for both rates: the chunk length is versioned (256 at 8 kHz, 512 at
    # 16 kHz; compiler/passes/README.md), batch symbolic. Static: one per size, as always.
    "silero_vad": (".models/silero_vad_v5.onnx",
                   ["--dim", "input_0=1..16", "--dim", "input_1=256,512", "--dim",
                    "state_1=input_0"],
                   [([f"input={b}x512;state=2x{b}x128" for b in (1, 4)], {"sr": 16000}),
                    ([f"input={b}x256;state=2x{b}x128" for b in (1, 4)], {"sr": 8000})]),
}


def scalar_file(tmp, value):
    """An int64 scalar as .npy v1, written by hand (no NumPy needed here)."""
    path = os.path.join(tmp, f"i64_{value}.npy")
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }"
    header += " " * (63 - len(header) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        f.write(int(value).to_bytes(8, "little", signed=True))
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--svg-dir", help="also write MODEL.svg plots here")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dynvm_dvs_")
    status = 0
    for key in a.models.split(","):
        path, flags, groups = MODELS[key]
        for k, (sizes, fixed) in enumerate(groups):
            cmd = [f"{a.build}/tools/vmbench", os.path.join(ROOT, path), *flags,
                   *[x for spec in sizes for x in ("--sizes", spec)], "--threads", a.threads, "--rounds", str(a.rounds), "--repeat", str(a.repeat),
                   "--ort", "-q"]
            for name, value in fixed.items():
                cmd += ["--input", f"{name}={scalar_file(tmp, value)}"]
            if a.svg_dir:
                cmd += ["--svg", os.path.join(a.svg_dir, f"{key}_{k}.svg")]
            print(f"== {key}" + "".join(f" {n}={v}" for n, v in fixed.items()), flush=True)
            status |= subprocess.run(cmd).returncode
            print(flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
