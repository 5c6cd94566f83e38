#!/usr/bin/env python3
"""Dynamic versus static compilation, and dynvm versus ONNX Runtime, in one run.

For each model: vmc compiles ONE executable with symbolic dims; for each size it also
compiles a fully static executable (vmc --static) and runs ONNX Runtime (onnxruntime-node
through ort_run.mjs, same thread count, all graph optimizations). Every engine runs the
same random input shape; the table gives median latencies and the ratios
dynamic/static and dynamic/ORT (lower is better for dynvm). The three run interleaved in
--rounds rounds, each keeping its best round's median, so that the slow minutes of a
shared machine do not land on one column only.

  usage: bench/dynamic_vs_static.py BUILD_DIR [--threads N] [--repeat N] [--rounds N]
                                    [--models a,b]
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

# name -> (model path, vmc flags, [(label, {input: shape}, {input: fixed value})]). Inputs
# with a shape get random f32 data; fixed values are i64 scalars (Silero's sample rate).
MODELS = {
    "demo": ("examples/demo/demo.onnx", ["--dim", "seq=1..4096"],
             [(f"seq={n}", {"x": [n, 16]}, {}) for n in (1, 64, 512, 4096)]),
    "ppocrv4_rec": (".models/ppocrv4_rec.onnx",
                    ["--dim", "p2o.DynamicDimension.0=1..8",
                     "--dim", "p2o.DynamicDimension.1=8..2048"],
                    [(f"N={n} W={w}", {"x": [n, 3, 48, w]}, {})
                     for n, w in ((1, 100), (1, 320), (1, 960), (4, 320))]),
    # ONE executable for both rates: the chunk length is versioned (256 at 8 kHz, 512 at
    # 16 kHz; compiler/passes/README.md), batch symbolic. Static: one per size, as always.
    "silero_vad": (".models/silero_vad_v5.onnx",
                   ["--dim", "input_0=1..16", "--dim", "input_1=256,512", "--dim",
                    "state_1=input_0"],
                   [(f"{rate // 1000}k batch={b}", {"input": [b, n], "state": [2, b, 128]},
                     {"sr": rate})
                    for rate, n in ((16000, 512), (8000, 256)) for b in (1, 4)]),
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr.strip()


def scalar_file(tmp, value):
    path = os.path.join(tmp, f"i64_{value}.npy")
    if not os.path.exists(path):
        # .npy v1 of an int64 scalar, written by hand (no numpy needed here)
        header = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }"
        header += " " * (63 - len(header) % 64) + "\n"
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
            f.write(int(value).to_bytes(8, "little", signed=True))
    return path


def vmrun_median(build, exe, shapes, fixed, tmp, threads, repeat):
    args = []
    for name, shape in shapes.items():
        args += ["--input", f"{name}={'x'.join(map(str, shape))}:f32"]
    for name, value in fixed.items():
        args += ["--input", f"{name}={scalar_file(tmp, value)}"]
    rc, out, err = run([f"{build}/tools/vmrun", exe, "--repeat", str(repeat),
                        "--threads", str(threads)] + args)
    if rc != 0:
        return None, err
    m = re.search(r"median ([0-9.]+) ms", out)
    return float(m.group(1)), None


def ort_median(ort, model, shapes, fixed, threads, repeat):
    if not ort:
        return None
    args = []
    for name, shape in shapes.items():
        args += ["--input", f"{name}={'x'.join(map(str, shape))}:float32"]
    for name, value in fixed.items():
        args += ["--input", f"{name}=scalar:int64=fill:{value}"]
    rc, out, err = run(["node", ort, model, "--threads", str(threads), "--iters", str(repeat),
                        "--warmup", "3"] + args)
    if rc != 0:
        return None
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def best(a, b):
    return b if a is None else a if b is None else min(a, b)


def fmt(v, spec=".3f"):
    return format(v, spec) if v is not None else "—"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds per size; the best round's median is kept")
    a = ap.parse_args()
    ort = os.environ.get("ORT_RUN", os.path.join(os.path.dirname(ROOT), "shared/peer/ort_run.mjs"))
    if not os.path.exists(ort):
        print(f"(ONNX Runtime column empty: {ort} not found)")
        ort = None
    vmc = f"{a.build}/tools/vmc"
    tmp = tempfile.mkdtemp(prefix="dynvm_dvs_")
    print(f"threads: {a.threads}, repeat: {a.repeat}, rounds: {a.rounds} "
          f"(best of the rounds' medians, ms)\n")
    print("| model | size | dynamic | static | dynamic/static | ORT | dynamic/ORT |")
    print("|---|---|---|---|---|---|---|")
    for key in a.models.split(","):
        path, flags, sizes = MODELS[key]
        model = os.path.join(ROOT, path)
        dyn = os.path.join(tmp, f"{key}.vmexe")
        rc, _, err = run([vmc, model, "-o", dyn, "-q"] + flags)
        if rc != 0:
            print(f"| {key} | — | not compiled: {err} | | | | |")
            continue
        for label, shapes, fixed in sizes:
            st = os.path.join(tmp, f"{key}_static.vmexe")
            static = []
            for name, shape in shapes.items():
                static += ["--static", f"{name}={'x'.join(map(str, shape))}"]
            # --dim aliases still apply; ranges are superseded by the static shapes
            aliases = [f for i, f in enumerate(flags) if i > 0 and flags[i - 1] == "--dim"
                       and not f.split("=", 1)[1][0].isdigit()]
            alias_flags = [x for f in aliases for x in ("--dim", f)]
            rc, _, err = run([vmc, model, "-o", st, "-q"] + static + alias_flags)
            # Rounds interleave the three (dynamic, static, ORT) so that a shared machine's
            # slow minutes hit all of them; each keeps its best round's median.
            t_dyn = t_st = t_ort = None
            e1 = e2 = None
            for _ in range(a.rounds):
                d, e1 = vmrun_median(a.build, dyn, shapes, fixed, tmp, a.threads, a.repeat)
                s_, e2 = (vmrun_median(a.build, st, shapes, fixed, tmp, a.threads, a.repeat)
                          if rc == 0 else (None, err))
                o = ort_median(ort, model, shapes, fixed, a.threads, a.repeat)
                t_dyn, t_st, t_ort = best(t_dyn, d), best(t_st, s_), best(t_ort, o)
            r1 = t_dyn / t_st if t_dyn and t_st else None
            r2 = t_dyn / t_ort if t_dyn and t_ort else None
            note = f" ({e1 or e2})" if (e1 or e2) else ""
            print(f"| {key} | {label} | {fmt(t_dyn)}{note} | {fmt(t_st)} | {fmt(r1, '.2f')} "
                  f"| {fmt(t_ort)} | {fmt(r2, '.2f')} |")


if __name__ == "__main__":
    sys.exit(main())
