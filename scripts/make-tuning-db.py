#!/usr/bin/env python3
"""Regenerates the tuning database that ships with dynvm (kernels/tune/db/): tunes the
kernels of the real models of bench/dynamic_vs_static.py's MODELS at their table's sizes,
and of the tuning zoo (scripts/models/make_tuning_zoo.py: one-operator models of every
template at realistic sizes), with vmtune (records appended to kernels/tune/db/
records.jsonl; a record already there is resumed, not measured again), writes every
measurement's features as training rows, and trains the cost model that vmc ranks
schedules with (kernels/tune/db/cost_model.ubj). Rebuild afterwards: the model is
assembled into the library.

  /usr/bin/python3 scripts/make-tuning-db.py [BUILD_DIR] [--exclude a,b] [--trials N]
      [--threads N] [--model-out FILE]

--exclude with --model-out trains a model without some models (held out, to measure how
the ranking does on models it has not seen: bench/tuned_vs_default.py --cost-model).
Needs the real models (make models) and a build (make build).
"""
import json
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from dynamic_vs_static import MODELS  # noqa: E402
from tuned_vs_default import tuning_runs  # noqa: E402

DB = os.path.join(ROOT, "kernels/tune/db")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--exclude", default="", help="models (MODELS keys or zoo names) left out")
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument("--model-out", default=os.path.join(DB, "cost_model.ubj"))
    a = ap.parse_args()
    vmtune = os.path.join(a.build, "tools/vmtune")
    records = os.path.join(DB, "records.jsonl")
    tmp = tempfile.mkdtemp(prefix="dynvm_tuning_db_")
    # name -> [(model path, vmtune arguments)], one entry per vmtune run
    runs = {key: [(os.path.join(ROOT, path), flags + extra) for extra in tuning_runs(sizes, tmp)]
            for key, (path, flags, sizes) in MODELS.items()}
    zoo = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/models/make_tuning_zoo.py"),
                          os.path.join(tmp, "zoo")], check=True, capture_output=True, text=True)
    for name, entry in json.loads(zoo.stdout).items():
        runs[name] = [(entry["path"], [x for s in entry["sizes"] for x in ("--sizes", s)])]
    excluded = set(filter(None, a.exclude.split(",")))
    if excluded - set(runs):
        sys.exit(f"make-tuning-db: no model {', '.join(sorted(excluded - set(runs)))}")
    rows = []
    for key, model_runs in runs.items():
        if key in excluded:
            continue
        for k, (model, args) in enumerate(model_runs):
            out = os.path.join(tmp, f"{key}_{k}.rows")
            cmd = [vmtune, model, "-o", records, "--rows", out,
                   "--trials", str(a.trials), "-q"] + args
            if a.threads:
                cmd += ["--threads", str(a.threads)]
            print("+", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            rows.append(out)
    subprocess.run([vmtune, "--fit-model", a.model_out] + rows, check=True)


if __name__ == "__main__":
    main()
