#!/usr/bin/env python3
"""Derives the kernels table from kernels_bench's JSON (one run): GFLOP/s per kernel, % of
the measured FMA peak, ratio to oneDNN, symbolic/static ratio per M, 2-thread scaling; and
the conv layer's row (dynvm static / symbolic vs the peak and oneDNN's nchw and blocked).

Single-thread rates use CPU time (the machine may be shared: wall time then includes other
processes' turns); the 2-thread scaling compares wall times, the only clock that sees both
threads. Medians when the run has repetitions."""
import re
import sys

from benchmark_json import load, seconds


def gflops(entry, key="cpu_time"):
    m = re.search(r"/(\d+)/(\d+)/(\d+)", entry["name"])
    if not m:  # peak_fma, conv rows: the counter is already a rate on CPU time
        return entry["flops"] / 1e9
    mm, k, n = (int(x) for x in m.groups())
    return 2.0 * mm * k * n / seconds(entry, key) / 1e9


def main(path):
    rows = load(path)
    peak = rows.get("peak_fma")
    peak_g = gflops(peak) if peak else None
    if peak:
        print(f"measured peak ({peak.get('label', '')}, 1 core): {peak_g:.1f} GFLOP/s")
    shapes = []
    for name in rows:
        m = re.match(r"(onednn|dynvm_static|dynvm_symbolic)/(\d+)/(\d+)/(\d+)", name)
        if m and (m.group(2), m.group(3), m.group(4)) not in shapes:
            shapes.append((m.group(2), m.group(3), m.group(4)))
    print()
    print("| M x K x N | oneDNN GFLOP/s | dynvm static | % peak | vs oneDNN "
          "| dynvm symbolic | symbolic/static |")
    print("|---|---|---|---|---|---|---|")

    def find(prefix, shape):
        for name, e in rows.items():
            if name.startswith(f"{prefix}/{'/'.join(shape)}") and (
                    "threads" not in name or "threads:1" in name):
                return e
        return None

    def fmt(x, spec=".1f"):
        return "-" if x is None else format(x, spec)

    for shape in shapes:
        dnn, st, sy = find("onednn", shape), find("dynvm_static", shape), find(
            "dynvm_symbolic", shape)
        g_dnn = gflops(dnn) if dnn else None
        g_st = gflops(st) if st else None
        g_sy = gflops(sy) if sy else None
        pct = 100 * g_st / peak_g if g_st and peak_g else None
        vs = g_st / g_dnn if g_st and g_dnn else None
        ratio = g_sy / g_st if g_sy and g_st else None
        print(f"| {' x '.join(shape)} | {fmt(g_dnn)} | {fmt(g_st)} | {fmt(pct, '.0f')}% "
              f"| {fmt(vs, '.2f')} | {fmt(g_sy)} | {fmt(ratio, '.2f')} |")
    print_conv(rows, peak_g, fmt)
    one = rows.get("dynvm_static/512/512/512/threads:1")
    two = rows.get("dynvm_static/512/512/512/threads:2")
    if one and two:
        scaling = seconds(one, "real_time") / seconds(two, "real_time")
        print(f"\n512^3 2-thread scaling (wall time): {scaling:.2f}x "
              f"({gflops(one, 'real_time'):.1f} -> {gflops(two, 'real_time'):.1f} GFLOP/s)")


def print_conv(rows, peak_g, fmt):
    """The conv rows: one layer, named `<impl>/<layer>/<variant>`."""
    layers = []
    for name in rows:
        m = re.match(r"(?:dynvm_conv|onednn_conv)/([^/]+)/", name)
        if m and m.group(1) not in layers:
            layers.append(m.group(1))
    if not layers:
        return
    print()
    print("| conv layer | dynvm static GFLOP/s | % peak | vs oneDNN nchw | vs oneDNN blocked "
          "| dynvm symbolic | symbolic/static | oneDNN nchw | oneDNN blocked |")
    print("|---|---|---|---|---|---|---|---|---|")

    def rate(name):
        e = rows.get(name)
        return gflops(e) if e else None

    def ratio(a, b):
        return a / b if a and b else None

    for layer in layers:
        st = rate(f"dynvm_conv/{layer}/static/threads:1")
        sy = rate(f"dynvm_conv/{layer}/symbolic/threads:1")
        nchw = rate(f"onednn_conv/{layer}/nchw")
        blocked = rate(f"onednn_conv/{layer}/blocked")
        pct = 100 * st / peak_g if st and peak_g else None
        print(f"| {layer} | {fmt(st)} | {fmt(pct, '.0f')}% | {fmt(ratio(st, nchw), '.2f')} "
              f"| {fmt(ratio(st, blocked), '.2f')} | {fmt(sy)} | {fmt(ratio(sy, st), '.2f')} "
              f"| {fmt(nchw)} | {fmt(blocked)} |")


if __name__ == "__main__":
    main(sys.argv[1])
