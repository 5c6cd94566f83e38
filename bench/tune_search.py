#!/usr/bin/env python3
"""Does the cost model earn its place? XGBoost-guided search against random search.

Runs `vmtune` twice on one model with the same sizes and trial budget, once with
--search model and once with --search random, each into its own records file, then reads
the records (appended in trial order per workload) and prints, per workload: the best cost
either search found, how many trials each needed to come within 5% of it (95% of the best
throughput), and each one's best after the budget. The two runs are interleaved workload
by workload would be fairer on a noisy machine; they run back to back, and a workload
whose best differs by less than the noise is a tie. Both searches measure the default
schedule first, so a workload whose default is within 5% of the best is reached in one trial
by both: the 99% column is the one that tells them apart.

  usage: bench/tune_search.py BUILD_DIR MODEL.onnx [--trials N] [--sizes SPEC]...
                              [--max-kernels N] [vmc flags after --]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def records(path):
    by_workload = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            by_workload.setdefault(r["workload"], (r["kernel"], []))[1].append(
                r["cost_ns"] if not r["error"] else None)
    return by_workload


def trials_to_reach(costs, target):
    best = None
    for i, c in enumerate(costs, 1):
        if c is not None and (best is None or c < best):
            best = c
        if best is not None and best <= target:
            return i
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("--trials", type=int, default=48)
    ap.add_argument("--sizes", action="append", default=[])
    ap.add_argument("--max-kernels", type=int, default=4)
    ap.add_argument("vmc", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    vmtune = os.path.join(a.build, "tools", "vmtune")
    tmp = tempfile.mkdtemp()
    logs = {}
    for search in ("model", "random"):
        logs[search] = os.path.join(tmp, f"{search}.jsonl")
        cmd = [vmtune, a.model, "-o", logs[search], "--search", search, "--trials", str(a.trials),
               "--max-kernels", str(a.max_kernels), "-q"]
        for s in a.sizes:
            cmd += ["--sizes", s]
        cmd += [x for x in a.vmc if x != "--"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    model, rand = records(logs["model"]), records(logs["random"])
    print(f"{'kernel':<28} {'best us':>9} {'to 95%: model':>14} {'random':>7} {'to 99%: model':>14}"
          f" {'random':>7} {'model best':>11} {'random best':>12}")
    wins = ties = wins99 = ties99 = 0
    for key, (name, costs) in model.items():
        other = rand.get(key, (name, []))[1]
        finite = [c for c in costs + other if c is not None]
        if not finite:
            continue
        best = min(finite)
        target = best / 0.95
        tm, tr = trials_to_reach(costs, target), trials_to_reach(other, target)
        tm99, tr99 = trials_to_reach(costs, best / 0.99), trials_to_reach(other, best / 0.99)
        bm = min((c for c in costs if c is not None), default=float("nan"))
        br = min((c for c in other if c is not None), default=float("nan"))
        fmt = lambda t: "-" if t is None else str(t)
        print(f"{name:<28.28} {best / 1e3:>9.1f} {fmt(tm):>14} {fmt(tr):>7} {fmt(tm99):>14}"
              f" {fmt(tr99):>7} {bm / 1e3:>11.1f} {br / 1e3:>12.1f}")
        for t_model, t_random, counts in ((tm, tr, 0), (tm99, tr99, 1)):
            if t_model is not None and (t_random is None or t_model < t_random):
                if counts == 0:
                    wins += 1
                else:
                    wins99 += 1
            elif t_model == t_random:
                if counts == 0:
                    ties += 1
                else:
                    ties99 += 1
    print(f"model-guided search reached 95% of the best in fewer trials on {wins} of "
          f"{len(model)} workloads ({ties} ties), 99% on {wins99} ({ties99} ties)")


if __name__ == "__main__":
    main()
