#!/usr/bin/python3
"""Runs dynvm on the dynamic corpus (tests/e2e/models/dynamic/, written by
export_dynamic_corpus.py) and compares with the PyTorch references.

For every model: `build/tools/vmc <model>/model.onnx -o <tmp>/<model>.vmexe` with no other
flags, then for every case `build/tools/vmrun <exe> --input NAME=<case>/inputs/NAME.npy ...
--output-dir <tmp>/...`, and each output against <case>/outputs/NAME.npy: same shape, same
dtype, values within rtol 1e-3 / atol 1e-4 (integers and bools exactly). Prints one line
per model and case: `pass`, or `FAIL` with the first error line of vmc or vmrun, or what
differs. With --ort, ONNX Runtime (onnxruntime-node through /work/shared/peer/ort_run.mjs)
is run on the case too and its agreement with the reference printed on the same line.

Exit status 0 when every case passes, 1 otherwise. Run from the repository root:
  /usr/bin/python3 scripts/models/check_dynamic_corpus.py [--ort] [--build DIR] [MODEL ...]"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_check  # noqa: E402

ROOT = "tests/e2e/models/dynamic"
RTOL, ATOL = 1e-3, 1e-4
TIMEOUT_S = 300


def first_error(done):
    """The first line of stderr that looks like an error (else the first line at all)."""
    lines = [ln.strip() for ln in (done.stderr or "").splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith(("vmc:", "vmrun:")) or "error" in ln.lower():
            return ln
    if lines:
        return lines[0]
    return f"exit status {done.returncode}, no message"


def ort_error(text):
    """The telling line of an ort_run failure, without terminal colours."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln).strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    for key in ("Status Message:", "ort_run: ", "terminate called"):
        for ln in lines:
            if key in ln:
                return ln[ln.index(key):][:200]
    return lines[0][:200] if lines else "no message"


def run(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"timed out after {TIMEOUT_S} s")


def compare(name, got, want):
    """None when got matches want, else a short description of the difference."""
    if got.shape != want.shape:
        return f"{name}: shape {list(got.shape)} != reference {list(want.shape)}"
    if got.dtype != want.dtype:
        return f"{name}: dtype {got.dtype} != reference {want.dtype}"
    if want.dtype.kind in "iub":
        if not np.array_equal(got, want):
            bad = int(np.sum(got != want))
            return f"{name}: {bad} of {want.size} values differ"
        return None
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
        diff = float(np.nanmax(np.abs(got.astype(np.float64) - want)))
        return f"{name}: max abs diff {diff:.3g} (rtol {RTOL}, atol {ATOL})"
    return None


def case_dirs(model_dir):
    cases = os.path.join(model_dir, "cases")
    return [os.path.join(cases, k) for k in sorted(os.listdir(cases), key=int)]


def load_dir(d):
    return {f[:-4]: np.load(os.path.join(d, f)) for f in sorted(os.listdir(d))
            if f.endswith(".npy")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="model names (default: all)")
    ap.add_argument("--build", default="build", help="the build folder (default: build)")
    ap.add_argument("--ort", action="store_true", help="also run ONNX Runtime on every case")
    opts = ap.parse_args()
    vmc = os.path.join(opts.build, "tools", "vmc")
    vmrun = os.path.join(opts.build, "tools", "vmrun")
    names = opts.models or sorted(d for d in os.listdir(ROOT)
                                  if os.path.isfile(os.path.join(ROOT, d, "model.onnx")))
    use_ort = opts.ort and ort_check.ort_available()
    if opts.ort and not use_ort:
        print("ONNX Runtime (onnxruntime-node) not found: --ort ignored")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="dynamic_corpus_") as tmp:
        for name in names:
            model_dir = os.path.join(ROOT, name)
            model = os.path.join(model_dir, "model.onnx")
            exe = os.path.join(tmp, f"{name}.vmexe")
            compiled = run([vmc, model, "-o", exe])
            for k, case in enumerate(case_dirs(model_dir)):
                label = f"{name} case {os.path.basename(case)}"
                inputs = load_dir(os.path.join(case, "inputs"))
                want = load_dir(os.path.join(case, "outputs"))
                shapes = ", ".join(f"{n}{list(v.shape)}" for n, v in inputs.items())
                if compiled.returncode != 0:
                    status = f"FAIL vmc: {first_error(compiled)}"
                else:
                    out_dir = os.path.join(tmp, name, str(k))
                    args = [vmrun, exe, "--output-dir", out_dir]
                    for n in inputs:
                        args += ["--input", f"{n}={os.path.abspath(os.path.join(case, 'inputs', n + '.npy'))}"]
                    ran = run(args)
                    if ran.returncode != 0:
                        status = f"FAIL vmrun: {first_error(ran)}"
                    else:
                        problems = []
                        for o, w in want.items():
                            path = os.path.join(out_dir, f"{o}.npy")
                            if not os.path.exists(path):
                                problems.append(f"{o}: not written")
                                continue
                            p = compare(o, np.load(path), w)
                            if p:
                                problems.append(p)
                        status = "pass" if not problems else "FAIL compare: " + "; ".join(problems)
                if not status.startswith("pass"):
                    failures += 1
                if use_ort:
                    try:
                        got = ort_check.ort_run(model, inputs)
                        bad = [p for p in (compare(o, got[o], w) for o, w in want.items()) if p]
                        status += "  [ORT: " + ("agrees" if not bad else "; ".join(bad)) + "]"
                    except RuntimeError as e:
                        status += "  [ORT fails: " + ort_error(str(e)) + "]"
                print(f"{label} ({shapes}): {status}", flush=True)
    print(f"{failures} failing case(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
