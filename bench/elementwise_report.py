#!/usr/bin/env python3
"""Derives the elementwise table from elementwise_bench's JSON (one run): GB/s of the chain
y = relu(x + z) * 0.5 (12 bytes of DRAM traffic per element), fused and unfused, as a
ratio to the measured bandwidth of a plain y = x + z loop (same traffic per element).

Single-thread rates use CPU time (on a shared machine wall time includes other
processes' turns); 2-thread rates use wall time, the only clock that sees both threads.
Medians when the run has repetitions."""
import sys

from benchmark_json import load, seconds

N = 1 << 24
BYTES = 12.0 * N


def gbps(entry, threads):
    return BYTES / seconds(entry, "cpu_time" if threads == 1 else "real_time") / 1e9


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
