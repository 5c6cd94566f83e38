#!/usr/bin/env python3
"""Tuned versus ranked versus default schedules, and each versus ONNX Runtime, in one run.

For each model of dynamic_vs_static.py's MODELS, vmc compiles three dynamic executables:
"default", the templates' default schedules (vmc --no-cost-model); "ranked", what vmc
does with no flags: schedules ranked by the cost model that ships with dynvm, measuring
nothing (or by the model --cost-model KEY=FILE gives, e.g. one trained without this model:
scripts/make-tuning-db.py --models ... --model-out FILE); "tuned", with a tuning log (vmc
--tuning-log; made here with vmtune at the table's sizes unless --log KEY=FILE gives one).
All run at every size, interleaved in rounds with ONNX Runtime (onnxruntime-node, same
threads), each keeping its best round's median. Ratios below 1: the first is faster.

  usage: bench/tuned_vs_default.py BUILD_DIR [--threads N] [--repeat N] [--rounds N]
                                   [--models a,b] [--trials N] [--log KEY=FILE]...
                                   [--cost-model KEY=FILE]...
"""
import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dynamic_vs_static import MODELS, ROOT, scalar_file  # noqa: E402


def tuning_runs(sizes, tmp):
    """vmtune arguments for a MODELS entry's sizes: one run per set of fixed input values (a
    sample rate), each with its --input files and its --sizes specs."""
    return [[x for name, value in sorted(fixed.items())
             for x in ("--input", f"{name}={scalar_file(tmp, value)}")]
            + [x for spec in specs for x in ("--sizes", spec)] for specs, fixed in sizes]


def expand(spec):
    """The concrete sizes of a --sizes spec ('x=1x3x48x{100,320}', inputs split by ';', each
    {..} group multiplying) as (label, {input: [dims]})."""
    groups = re.findall(r"\{([^}]*)\}", spec)
    out = []
    for values in itertools.product(*[g.split(",") for g in groups]):
        it = iter(values)
        label = re.sub(r"\{[^}]*\}", lambda _: next(it), spec)
        shapes = {}
        for part in label.split(";"):
            name, dims = part.split("=", 1)
            shapes[name] = [int(d) for d in dims.split("x")]
        out.append((label, shapes))
    return out


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr.strip()


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
    return float(re.search(r"median ([0-9.]+) ms", out).group(1)), None


def ort_median(ort, model, shapes, fixed, threads, repeat):
    if not ort:
        return None
    args = []
    for name, shape in shapes.items():
        args += ["--input", f"{name}={'x'.join(map(str, shape))}:float32"]
    for name, value in fixed.items():
        args += ["--input", f"{name}=scalar:int64=fill:{value}"]
    rc, out, _ = run(["node", ort, model, "--threads", str(threads), "--iters", str(repeat),
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
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--log", action="append", default=[], help="KEY=FILE: a tuning log to use")
    ap.add_argument("--cost-model", action="append", default=[],
                    help="KEY=FILE: the cost model that ranks KEY's schedules")
    a = ap.parse_args()
    logs = dict(x.split("=", 1) for x in a.log)
    models = dict(x.split("=", 1) for x in a.cost_model)
    ort = os.environ.get("ORT_RUN", os.path.join(os.path.dirname(ROOT), "shared/peer/ort_run.mjs"))
    if not os.path.exists(ort):
        print(f"(ONNX Runtime columns empty: {ort} not found)")
        ort = None
    tmp = tempfile.mkdtemp(prefix="dynvm_tuned_")
    vmc, vmtune = f"{a.build}/tools/vmc", f"{a.build}/tools/vmtune"
    print(f"threads: {a.threads}, repeat: {a.repeat}, rounds: {a.rounds} "
          f"(best of the rounds' medians, ms)\n")
    print("| model | size | default | ranked | tuned | ranked/default | tuned/default | ORT "
          "| default/ORT | ranked/ORT | tuned/ORT |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in a.models.split(","):
        path, flags, sizes = MODELS[key]
        model = os.path.join(ROOT, path)
        log = logs.get(key)
        if log is None:
            log = os.path.join(tmp, f"{key}.tune.jsonl")
            rc, err = 0, ""
            for extra in tuning_runs(sizes, tmp):
                rc, _, err = run([vmtune, model, "-o", log, "--trials", str(a.trials), "--threads",
                                  str(a.threads), "-q"] + flags + extra)
                if rc != 0:
                    break
            if rc != 0:
                print(f"| {key} | — | not tuned: {err} | | | | | | | | |")
                continue
        exes = {}
        ranked = ["--cost-model", models[key]] if key in models else []
        kinds = (("default", ["--no-cost-model"]), ("ranked", ranked),
                 ("tuned", ["--tuning-log", log]))
        for kind, extra in kinds:
            exes[kind] = os.path.join(tmp, f"{key}_{kind}.vmexe")
            rc, _, err = run([vmc, model, "-o", exes[kind], "-q"] + flags + extra)
            if rc != 0:
                print(f"| {key} | — | not compiled ({kind}): {err} | | | | | | | | |")
                exes = None
                break
        if exes is None:
            continue
        for label, shapes, fixed in [(label, shapes, fixed) for specs, fixed in sizes
                                     for spec in specs for label, shapes in expand(spec)]:
            t = {"default": None, "ranked": None, "tuned": None, "ort": None}
            for _ in range(a.rounds):
                for kind, _ in kinds:
                    v, _ = vmrun_median(a.build, exes[kind], shapes, fixed, tmp, a.threads, a.repeat)
                    t[kind] = best(t[kind], v)
                t["ort"] = best(t["ort"], ort_median(ort, model, shapes, fixed, a.threads, a.repeat))
            ratio = lambda x, y: t[x] / t[y] if t[x] and t[y] else None
            print(f"| {key} | {label} | {fmt(t['default'])} | {fmt(t['ranked'])} "
                  f"| {fmt(t['tuned'])} | {fmt(ratio('ranked', 'default'), '.2f')} "
                  f"| {fmt(ratio('tuned', 'default'), '.2f')} | {fmt(t['ort'])} "
                  f"| {fmt(ratio('default', 'ort'), '.2f')} | {fmt(ratio('ranked', 'ort'), '.2f')} "
                  f"| {fmt(ratio('tuned', 'ort'), '.2f')} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
