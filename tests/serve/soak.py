#!/usr/bin/env python3
"""Soak test for vmserve (`make soak`, not part of `make test`): 10,000 requests of random
lengths (PP-OCRv4 rec at widths 100..960 and batch 1..4, the text CNN at 1..500 tokens)
from 8 concurrent clients; the server's resident memory after warm-up must grow by less
than 10%, every answer must be 200, and the server must stop cleanly.

  /usr/bin/python3 tests/serve/soak.py [--build build] [--requests 10000]
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from kserve_client import Server  # noqa: E402


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--clients", type=int, default=8)
    a = ap.parse_args()
    work = os.path.join(a.build, "soak")
    os.makedirs(work, exist_ok=True)
    vmc = os.path.join(a.build, "tools", "vmc")
    models = {"rec": os.path.join(ROOT, ".models", "ppocrv4_rec.onnx"),
              "text": os.path.join(ROOT, "tests", "e2e", "models", "dynamic",
                                   "cnn_text_classifier", "model.onnx")}
    for name, onnx in models.items():
        exe = os.path.join(work, name + ".vmexe")
        if not os.path.exists(exe):
            subprocess.run([vmc, onnx, "-o", exe, "--quiet"], check=True)

    server = Server(os.path.join(a.build, "tools", "vmserve"),
                    [os.path.join(work, "rec.vmexe"), os.path.join(work, "text.vmexe"),
                     "--threads", "2", "--shapes-out", os.path.join(work, "shapes.json")])
    rng = np.random.default_rng(1)
    plan = []
    for i in range(a.requests):
        if i % 4 == 0:
            plan.append(("rec", {"x": rng.uniform(-1, 1, (int(rng.integers(1, 5)), 3, 48,
                                                          int(rng.integers(100, 961))))
                                 .astype(np.float32)}))
        else:
            plan.append(("text", {"tokens": rng.integers(0, 30, (int(rng.integers(1, 5)),
                                                                   int(rng.integers(1, 501))))}))
    warm = a.requests // 10
    statuses = {}
    samples = []

    def send_all(requests):
        def client(k):
            c = server.client()
            for model, feeds in requests[k::a.clients]:
                r = c.infer_binary(model, feeds)
                statuses[r.status] = statuses.get(r.status, 0) + 1
            c.close()

        with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:
            list(pool.map(client, range(a.clients)))

    start = time.time()
    # Warm-up: the allocator's pools and the VMs fill up to what this traffic needs.
    send_all(plan[:warm])
    base = rss_kib(server.proc.pid)
    done = [False]

    def sampler():
        while not done[0]:
            samples.append(rss_kib(server.proc.pid))
            time.sleep(0.5)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        watcher = pool.submit(sampler)
        send_all(plan[warm:])
        done[0] = True
        watcher.result()
    end = rss_kib(server.proc.pid)
    code = server.stop()
    seconds = time.time() - start
    peak = max(samples + [end])
    growth = (end - base) / base
    print(f"soak: {a.requests} requests in {seconds:.0f} s, statuses {statuses}; resident "
          f"memory after warm-up {base / 1024:.0f} MiB, at the end {end / 1024:.0f} MiB "
          f"({growth * 100:+.1f}%), peak {peak / 1024:.0f} MiB; exit {code}")
    ok = statuses == {200: a.requests} and growth < 0.10 and code == 0
    print("soak: " + ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
