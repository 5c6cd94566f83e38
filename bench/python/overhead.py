#!/usr/bin/env python3
"""What calling dynvm from Python costs: a tiny model (y = x + 1 on 16 floats, so the run
itself is almost nothing) run by `vmrun --repeat` (the in-process median vmrun prints) and
from Python, in interleaved rounds; each one's best median is kept (the machine is shared).

    PYTHONPATH=build/python /usr/bin/python3 bench/python/overhead.py [--build build]

Rows:
  vmrun --repeat            the C++ loop around Executor::run (the baseline)
  Executable.benchmark      the same loop, inside the Python process
  exe.run(dict of arrays)   one Python call per run: binding the arrays, releasing the
                            GIL, the run, the outputs as NumPy arrays
  exe.run(BoundInputs)      the same with the inputs bound once (Executable.bind)
The Python rows' overhead is their median minus vmrun's.
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def tiny_model():
    from onnx import TensorProto, helper, numpy_helper
    one = numpy_helper.from_array(np.array([1.0], np.float32), "one")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])], [one])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8).SerializeToString()


def vmrun_median_us(vmrun, exe_path, runs):
    out = subprocess.run([vmrun, str(exe_path), "--input", "x=16:f32", "--repeat", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1)) * 1000


def python_median_us(call, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3000, help="runs per engine per round")
    args = ap.parse_args()
    sys.path.insert(0, str(pathlib.Path(args.build) / "python"))
    import dynvm

    vmrun = str(pathlib.Path(args.build) / "tools" / "vmrun")
    exe = dynvm.compile(tiny_model(), progress=False)
    x = np.random.default_rng(0).random(16, dtype=np.float32)
    feeds = {"x": x}
    bound = exe.bind(feeds)
    with tempfile.TemporaryDirectory() as tmp:
        exe_path = pathlib.Path(tmp) / "tiny.vmexe"
        exe.save(exe_path)
        best = {}
        rows = {
            "vmrun --repeat": lambda: vmrun_median_us(vmrun, exe_path, args.runs),
            "Executable.benchmark": lambda: exe.benchmark(feeds, repeat=args.runs).median_ms * 1000,
            "exe.run(dict of arrays)": lambda: python_median_us(lambda: exe.run(feeds), args.runs),
            "exe.run(BoundInputs)": lambda: python_median_us(lambda: exe.run(bound), args.runs),
        }
        for r in range(args.rounds):
            for name, measure in rows.items():
                best[name] = min(best.get(name, float("inf")), measure())
    base = best["vmrun --repeat"]
    print(f"tiny model (Add on 16 floats), {os.cpu_count()} hardware threads, "
          f"{args.rounds} rounds x {args.runs} runs, best median per row")
    print(f"| {'how':<26} | {'median us':>9} | {'minus vmrun us':>14} |")
    print(f"|{'-' * 28}|{'-' * 10}:|{'-' * 15}:|")
    for name, us in best.items():
        extra = "" if name == "vmrun --repeat" else f"{us - base:+.2f}"
        print(f"| {name:<26} | {us:>9.2f} | {extra:>14} |")


if __name__ == "__main__":
    main()
