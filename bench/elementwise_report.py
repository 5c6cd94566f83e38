#!/usr/bin/env python3
"""Derives the elementwise table from elementwise_bench's JSON (one run): GB/s of the chain
y = relu(x + z) * 0.5 (12 bytes of DRAM traffic per element), fused and unfused, as a
ratio to the measured bandwidth of a plain y = x + z loop (same traffic per element).

Single-thread rates use CPU time (on a shared machine wall time includes other
processes' turns); 2-thread rates use wall time, the only clock that sees both threads.
Medians when the run has repetitions."""
import json
import sys

N = 1 << 24
BYTES = 12.0 * N


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"]).removesuffix("/real_time")
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("run_type") == "iteration" and name in rows and rows[name].get("_median"):
            continue
        entry = dict(b)
        entry["_median"] = b.get("run_type") == "aggregate"
        rows[name] = entry
    return rows


def gbps(entry, threads):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry.get("time_unit", "ns")]
    t = entry["cpu_time" if threads == 1 else "real_time"] * scale
    return BYTES / t / 1e9


def main(path):
    rows = load(path)
    print("| threads | bandwidth (x + z loop) | fused static | fused symbolic | % of bandwidth "
          "| symbolic/static | unfused (3 kernels) | fused/unfused |")
    print("|---|---|---|---|---|---|---|---|")
    for threads in (1, 2):
        def get(prefix):
            e = rows.get(f"{prefix}/threads:{threads}")
            return gbps(e, threads) if e else None

        ref, fs, fy, un = (get(p) for p in ("stream_add", "dynvm_fused/static",
                                            "dynvm_fused/symbolic", "dynvm_unfused/symbolic"))
        if None in (ref, fs, fy, un):
            continue
        print(f"| {threads} | {ref:.1f} GB/s | {fs:.1f} GB/s | {fy:.1f} GB/s "
              f"| {100 * fy / ref:.0f}% | {fy / fs:.2f} | {un:.1f} GB/s | {fy / un:.2f}x |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
