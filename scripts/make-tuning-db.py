#!/usr/bin/env python3
"""Regenerates the tuning database that ships with dynvm (kernels/tune/db/): tunes the
kernels of the real models of bench/dynamic_vs_static.py's MODELS at their table's sizes
with vmtune (records appended to kernels/tune/db/records.jsonl; a record already there is
resumed, not measured again), writes every measurement's features as training rows, and
trains the cost model that vmc ranks schedules with (kernels/tune/db/cost_model.ubj).
Rebuild afterwards: the model is assembled into the library.

  /usr/bin/python3 scripts/make-tuning-db.py [BUILD_DIR] [--models a,b] [--trials N]
      [--threads N] [--model-out FILE]

--models with --model-out trains a model on some models only (the others held out, to
measure how the ranking does on models it has not seen: bench/tuned_vs_default.py
--cost-model). Needs the models (make models) and a build (make build).
"""
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
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--trials", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument("--model-out", default=os.path.join(DB, "cost_model.ubj"))
    a = ap.parse_args()
    vmtune = os.path.join(a.build, "tools/vmtune")
    records = os.path.join(DB, "records.jsonl")
    tmp = tempfile.mkdtemp(prefix="dynvm_tuning_db_")
    rows = []
    for key in a.models.split(","):
        if key not in MODELS:
            sys.exit(f"make-tuning-db: no model {key} (have {', '.join(MODELS)})")
        path, flags, sizes = MODELS[key]
        for k, extra in enumerate(tuning_runs(sizes, tmp)):
            out = os.path.join(tmp, f"{key}_{k}.rows")
            cmd = [vmtune, os.path.join(ROOT, path), "-o", records, "--rows", out,
                   "--trials", str(a.trials), "-q"] + flags + extra
            if a.threads:
                cmd += ["--threads", str(a.threads)]
            print("+", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            rows.append(out)
    subprocess.run([vmtune, "--fit-model", a.model_out] + rows, check=True)


if __name__ == "__main__":
    main()
