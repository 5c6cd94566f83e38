#!/usr/bin/env python3
"""Dynamic versus static compilation, and dynvm versus ONNX Runtime, in one run.

For each model: vmc compiles ONE executable with symbolic dims; for each size it also
compiles a fully static executable (vmc --static) and runs ONNX Runtime (onnxruntime-node
through ort_run.mjs, same thread count, all graph optimizations). Every engine runs the
same random input shape; the table gives median latencies and the ratios
dynamic/static and dynamic/ORT (lower is better for dynvm).

  usage: bench/dynamic_vs_static.py BUILD_DIR [--threads N] [--repeat N] [--models a,b]
  ORT: $ORT_RUN (default ../shared/peer/ort_run.mjs next to the repository); its column is
  left empty when it is missing.

Models that dynvm cannot compile yet are listed with the compiler's one-line reason."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (model path, vmc --dim flags, input name, [(label, shape)], ort --dim flags)
MODELS = {
    "demo": ("examples/demo/demo.onnx", ["--dim", "seq=1..4096"], "x",
             [("seq=1", [1, 16]), ("seq=64", [64, 16]), ("seq=512", [512, 16]),
              ("seq=4096", [4096, 16])]),
    "ppocrv4_rec": (".models/ppocrv4_rec.onnx",
                    ["--dim", "p2o.DynamicDimension.0=1..8",
                     "--dim", "p2o.DynamicDimension.1=8..2048"], "x",
                    [("N=1 W=100", [1, 3, 48, 100]), ("N=1 W=320", [1, 3, 48, 320]),
                     ("N=1 W=960", [1, 3, 48, 960]), ("N=4 W=320", [4, 3, 48, 320])]),
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr.strip()


def vmrun_median(build, exe, name, shape, threads, repeat):
    spec = f"{name}={'x'.join(map(str, shape))}:f32"
    rc, out, err = run([f"{build}/vm/tools/vmrun", exe, "--input", spec, "--repeat", str(repeat),
                        "--threads", str(threads)])
    if rc != 0:
        return None, err
    m = re.search(r"median ([0-9.]+) ms", out)
    return float(m.group(1)), None


def ort_median(ort, model, name, shape, threads, repeat):
    if not ort:
        return None
    rc, out, err = run(["node", ort, model, "--input", f"{name}={'x'.join(map(str, shape))}:float32",
                        "--threads", str(threads), "--iters", str(repeat), "--warmup", "3"])
    if rc != 0:
        return None
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def fmt(v, spec=".3f"):
    return format(v, spec) if v is not None else "—"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models", default=",".join(MODELS))
    a = ap.parse_args()
    ort = os.environ.get("ORT_RUN", os.path.join(os.path.dirname(ROOT), "shared/peer/ort_run.mjs"))
    if not os.path.exists(ort):
        print(f"(ONNX Runtime column empty: {ort} not found)")
        ort = None
    vmc = f"{a.build}/compiler/vmc"
    tmp = tempfile.mkdtemp(prefix="dynvm_dvs_")
    print(f"threads: {a.threads}, repeat: {a.repeat} (medians, ms)\n")
    print("| model | size | dynamic | static | dynamic/static | ORT | dynamic/ORT |")
    print("|---|---|---|---|---|---|---|")
    for key in a.models.split(","):
        path, dims, name, sizes = MODELS[key]
        model = os.path.join(ROOT, path)
        dyn = os.path.join(tmp, f"{key}.vmexe")
        rc, _, err = run([vmc, model, "-o", dyn, "-q"] + dims)
        if rc != 0:
            print(f"| {key} | — | not compiled: {err} | | | | |")
            continue
        for label, shape in sizes:
            st = os.path.join(tmp, f"{key}_static.vmexe")
            rc, _, err = run([vmc, model, "-o", st, "-q", "--static", f"{name}={'x'.join(map(str, shape))}"])
            t_dyn, e1 = vmrun_median(a.build, dyn, name, shape, a.threads, a.repeat)
            t_st, e2 = vmrun_median(a.build, st, name, shape, a.threads, a.repeat) if rc == 0 else (None, err)
            t_ort = ort_median(ort, model, name, shape, a.threads, a.repeat)
            r1 = t_dyn / t_st if t_dyn and t_st else None
            r2 = t_dyn / t_ort if t_dyn and t_ort else None
            note = f" ({e1 or e2})" if (e1 or e2) else ""
            print(f"| {key} | {label} | {fmt(t_dyn)}{note} | {fmt(t_st)} | {fmt(r1, '.2f')} "
                  f"| {fmt(t_ort)} | {fmt(r2, '.2f')} |")


if __name__ == "__main__":
    sys.exit(main())
