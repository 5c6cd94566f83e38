#!/usr/bin/env python3
"""The serving load benchmark: vmserve against ONNX Runtime behind the same protocol
(ort_server.mjs), driven by the same client (load.mjs) with the same variable-length
traffic, interleaved in rounds; each engine keeps its best round (highest throughput).

ONNX Runtime runs in the two shapes that use the same cores as vmserve's --threads T:
one process with T intra-op threads, and T single-threaded processes; each row takes the
better of the two. Then vmserve serving each request at its own length against vmserve
serving the same requests padded to fixed buckets (what a static engine needs).

  /usr/bin/python3 bench/serve/run.py [--build build] [--threads 2] [--rounds 3]
      [--duration 5] [--concurrency 1,4,16] [--models rec,vad] [--json out.json]
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "bench", "serve")

# The traffic: PP-OCRv4 text lines, width log-normal around 320 (100..960); Silero VAD
# chunks of 192..703 samples at 16 kHz (what the model accepts there).
TRAFFIC = {
    "rec": {"onnx": "ppocrv4_rec.onnx", "inputs": ["x=1x3x48x{W}:FP32"],
            "widths": "lognormal:320:0.5:100:960", "buckets": "320,640,960"},
    "vad": {"onnx": "silero_vad_v5.onnx",
            "inputs": ["input=1x{W}:FP32", "state=2x1x128:FP32", "sr=:INT64=16000"],
            "widths": "uniform:192:703", "buckets": "512,703"},
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd, ready):
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not re.search(ready, line):
        proc.kill()
        sys.exit(f"run.py: {cmd[0]} did not start: {line!r}")
    return proc


def load(url, model, traffic, c, seconds, pad=None):
    cmd = ["node", os.path.join(HERE, "load.mjs"), "--url", url, "--model", model,
           "--widths", traffic["widths"], "--concurrency", str(c), "--duration", str(seconds),
           "--seed", "1", "--json"]
    for spec in traffic["inputs"]:
        cmd += ["--input", spec]
    if pad:
        cmd += ["--pad-to", pad]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        return {"failures": -1, "throughput_rps": 0, "error": out.stderr.strip()[-300:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def better(a, b):
    return b if a is None or b["throughput_rps"] > a["throughput_rps"] else a


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--models", default="rec,vad")
    ap.add_argument("--json")
    a = ap.parse_args()
    models = a.models.split(",")
    levels = [int(c) for c in a.concurrency.split(",")]
    work = os.path.join(a.build, "bench-serve")
    os.makedirs(work, exist_ok=True)
    vmc = os.path.join(a.build, "tools", "vmc")
    for m in models:
        exe = os.path.join(work, m + ".vmexe")
        if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(vmc):
            print(f"run.py: compiling {TRAFFIC[m]['onnx']} (vmc, no flags)", file=sys.stderr)
            subprocess.run([vmc, os.path.join(ROOT, ".models", TRAFFIC[m]["onnx"]), "-o", exe,
                            "--quiet"], check=True, stderr=subprocess.DEVNULL)

    t = a.threads
    servers = {}
    procs = []
    try:
        port = free_port()
        procs.append(start([os.path.join(a.build, "tools", "vmserve"),
                            *[f"{m}={os.path.join(work, m + '.vmexe')}" for m in models],
                            "--threads", str(t), "--port", str(port), "--shapes-out",
                            os.path.join(work, "shapes.json")], "serving"))
        servers["dynvm"] = f"http://127.0.0.1:{port}"
        onnx = [f"{m}={os.path.join(ROOT, '.models', TRAFFIC[m]['onnx'])}" for m in models]
        for name, workers, threads in (("ort 1x%d" % t, 1, t), ("ort %dx1" % t, t, 1)):
            port = free_port()
            procs.append(start(["node", os.path.join(HERE, "ort_server.mjs"), *onnx, "--port",
                                str(port), "--threads", str(threads), "--workers", str(workers)],
                               "listening"))
            servers[name] = f"http://127.0.0.1:{port}"

        results = []
        for m in models:
            for c in levels:
                best = {}
                for r in range(a.rounds):
                    for name, url in servers.items():
                        best[name] = better(best.get(name), load(url, m, TRAFFIC[m], c, a.duration))
                    best["dynvm padded"] = better(best.get("dynvm padded"), load(
                        servers["dynvm"], m, TRAFFIC[m], c, a.duration, TRAFFIC[m]["buckets"]))
                ort_name = max((n for n in best if n.startswith("ort")),
                               key=lambda n: best[n]["throughput_rps"])
                row = {"model": m, "concurrency": c, "dynvm": best["dynvm"],
                       "ort": best[ort_name], "ort_config": ort_name,
                       "padded": best["dynvm padded"],
                       "ort_configs": {n: best[n] for n in best if n.startswith("ort")}}
                results.append(row)
                print_row(row, t)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
    print_table(results, t)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


def ratio(a, b):
    """a's throughput over b's."""
    return a["throughput_rps"] / b["throughput_rps"] if b["throughput_rps"] else float("nan")


def print_row(row, t):
    d, o = row["dynvm"], row["ort"]
    print(f"  {row['model']} c={row['concurrency']}: dynvm {d['throughput_rps']:.1f} rps "
          f"p99 {d.get('p99_ms', 0):.1f} ms | {row['ort_config']} {o['throughput_rps']:.1f} rps "
          f"p99 {o.get('p99_ms', 0):.1f} ms", file=sys.stderr)


def print_table(results, t):
    print(f"\nthroughput (requests/s) and latency (ms), {t} threads; ORT: the better of "
          f"1 process x {t} threads and {t} processes x 1 thread")
    print("| model | c | dynvm rps | ORT rps | dynvm/ORT | dynvm p50 / p90 / p99 | "
          "ORT p50 / p90 / p99 | ORT config |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        d, o = r["dynvm"], r["ort"]
        lat = lambda x: f"{x.get('p50_ms', 0):.1f} / {x.get('p90_ms', 0):.1f} / " \
                        f"{x.get('p99_ms', 0):.1f}"  # noqa: E731
        print(f"| {r['model']} | {r['concurrency']} | {d['throughput_rps']:.1f} | "
              f"{o['throughput_rps']:.1f} | {ratio(d, o):.2f} | {lat(d)} | {lat(o)} | "
              f"{r['ort_config']} |")
    print("\nown length vs padded to buckets (dynvm both)")
    print("| model | c | own length rps | padded rps | own/padded | padding waste | "
          "own p99 | padded p99 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        d, p = r["dynvm"], r["padded"]
        print(f"| {r['model']} | {r['concurrency']} | {d['throughput_rps']:.1f} | "
              f"{p['throughput_rps']:.1f} | {ratio(d, p):.2f} | {p.get('padding_waste', 0) * 100:.0f}% | "
              f"{d.get('p99_ms', 0):.1f} | {p.get('p99_ms', 0):.1f} |")


if __name__ == "__main__":
    main()
