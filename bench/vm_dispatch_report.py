#!/usr/bin/env python3
"""Reads vm_dispatch's JSON (--benchmark_format=json) from one run and prints the VM's
cost: ns per simple instruction and ns of VM overhead per kernel call (an iteration of
the kernel loop minus its three simple instructions, measured in the same run)."""
import json
import sys


def main():
    data = json.load(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)
    by_name = {b["name"]: b for b in data["benchmarks"] if b.get("run_type", "iteration") == "iteration"}
    per_instr = by_name["BM_SimpleInstruction"]["s_per_instruction"] * 1e9
    print(f"{'measure':44s} {'ns':>8s} {'target':>8s}")
    print(f"{'simple instruction (add/cmp/if)':44s} {per_instr:8.2f} {'< 10':>8s}")
    for name, label in [("BM_InvokeKernel", "kernel call, one variant"),
                        ("BM_InvokeKernelDispatch", "kernel call, residue dispatch (2 variants)")]:
        per_iter = by_name[name]["s_per_iteration"] * 1e9
        overhead = per_iter - 3 * per_instr
        print(f"{label:44s} {overhead:8.2f} {'< 100':>8s}")


if __name__ == "__main__":
    main()
