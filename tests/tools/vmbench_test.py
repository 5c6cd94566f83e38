#!/usr/bin/env python3
"""vmbench end to end (ctest: tools.vmbench): the demo model and a real model (Silero VAD)
with few repeats; the table's structure and sanity (every size measured or its error
named, ratios equal to the printed medians' quotients, the totals), JSON that parses and
agrees with the table, an SVG that renders (rsvg-convert), traffic-weighted sizes from a
shapes file, ONNX Runtime's column when the peer is installed, and one-line errors.

Environment: VMBENCH (the binary), SOURCE_DIR (the repository), DYNVM_MODELS_DIR (optional).
"""
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

VMBENCH = os.environ.get("VMBENCH", "build/tools/vmbench")
SOURCE = pathlib.Path(os.environ.get("SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
MODELS = pathlib.Path(os.environ.get("DYNVM_MODELS_DIR", SOURCE / ".models"))
DEMO = SOURCE / "examples" / "demo" / "demo.onnx"
FAST = ["--rounds", "2", "--repeat", "3", "-q"]


def vmbench(*args, expect=0):
    r = subprocess.run([VMBENCH, *map(str, args)], capture_output=True, text=True, timeout=900)
    assert r.returncode == expect, (r.returncode, r.stdout, r.stderr)
    return r


def tables(text):
    """{threads: [row dicts]} of the per-size tables, and the builds table's rows."""
    runs, builds, current, header = {}, [], None, None
    for line in text.splitlines():
        m = re.fullmatch(r"(\d+) threads?", line)
        if m:
            current = runs.setdefault(int(m.group(1)), [])
            header = None
            continue
        if line == "builds":
            current, header = builds, None
            continue
        if not line.startswith("|") or current is None:
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(cells[0]) <= set("-:"):
            current.append(dict(zip(header, cells)))
    return runs, builds


def number(cell):
    return None if cell == "—" else float(cell)


class VmbenchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="vmbench_test_"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check_rows(self, rows, sizes):
        self.assertEqual([r["size"] for r in rows], sizes)
        for r in rows:
            for engine, ratio in (("static", "dynamic/static"), ("ORT", "dynamic/ORT")):
                if engine not in r:
                    continue
                d, s = number(r["dynamic"]), number(r[engine])
                if d is None or s is None:
                    self.assertEqual(r[ratio], "—")
                else:  # the ratio of the printed medians
                    self.assertEqual(r[ratio], f"{d / s:.2f}", r)
            if number(r["dynamic"]) is not None:
                self.assertLessEqual(number(r["dynamic"]), number(r["dynamic p90"]) + 1e-9)
                self.assertGreater(number(r["peak MiB dynamic"]), 0)

    def test_demo_sizes_threads_json_and_svg(self):
        json_path, svg_path = self.tmp / "out.json", self.tmp / "out.svg"
        r = vmbench(DEMO, "--dim", "seq=1..4096", "--sizes", "x={1,64,512}x16",
                    "--sizes", "x=5000x16", "--threads", "1,2", *FAST,
                    "--json", json_path, "--svg", svg_path)
        out = r.stdout
        sizes = ["x=1x16", "x=64x16", "x=512x16", "x=5000x16"]
        runs, builds = tables(out)
        self.assertEqual(sorted(runs), [1, 2])
        for rows in runs.values():
            self.check_rows(rows, sizes)
            # Every size is measured or its error is named: 5000 is outside the dynamic
            # build's range, and the static build of that size still runs.
            self.assertEqual(rows[3]["dynamic"], "—")
            self.assertIsNotNone(number(rows[3]["static"]))
            for row in rows[:3]:
                self.assertIsNotNone(number(row["dynamic"]))
                self.assertIsNotNone(number(row["static"]))
        self.assertIn("x=5000x16: dynamic: input 'x' dim 0 (seq) = 5000 is outside the "
                      "declared range 1..4096", out)
        self.assertIn("ONNX Runtime: not measured (add --ort)", out)
        # One build per size plus the dynamic one, and the totals add up.
        self.assertEqual([b["build"] for b in builds],
                         ["dynamic (every size)"] + [f"static {s}" for s in sizes]
                         + ["static, 4 builds"])
        static_sum = sum(float(b["compile s"]) for b in builds[1:-1])
        # Each printed time is rounded to 0.01 s: the four and their total can be 0.025 apart.
        self.assertAlmostEqual(float(builds[-1]["compile s"]), static_sum, delta=0.026)
        # The JSON says what the table says.
        doc = json.loads(json_path.read_text())
        self.assertEqual([s["label"] for s in doc["sizes"]], sizes)
        self.assertEqual([run["threads"] for run in doc["runs"]], [1, 2])
        for run in doc["runs"]:
            rows = runs[run["threads"]]
            for row, size in zip(rows, run["sizes"]):
                if size["dynamic"] and "median_ms" in size["dynamic"]:
                    self.assertEqual(row["dynamic"], f"{size['dynamic']['median_ms']:.3f}")
            self.assertIn("error", run["sizes"][3]["dynamic"])
        self.assertEqual(doc["totals"]["static_builds"], 4)
        # The break-even: the fewest sizes whose static builds take longer than the dynamic one.
        each = doc["totals"]["static_compile_s"] / 4
        expected = max(1, math.ceil(doc["builds"]["dynamic"]["compile_s"] / each - 1e-9))
        self.assertEqual(doc["totals"]["break_even_sizes"], expected)
        self.assertIn(f"static builds from {expected} size", out)
        self.assertEqual(doc["builds"]["dynamic"]["ok"], True)
        # The SVG is self-contained and renders.
        svg = svg_path.read_text()
        self.assertTrue(svg.startswith("<?xml") and "<svg" in svg and "<script" not in svg)
        self.assertNotIn("href", svg)
        png = self.tmp / "out.png"
        subprocess.run(["rsvg-convert", "-o", png, svg_path], check=True)
        self.assertEqual(png.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(png.stat().st_size, 5000)

    def test_real_model_with_a_fixed_input_and_traffic_weights(self):
        model = MODELS / "silero_vad_v5.onnx"
        self.assertTrue(model.exists(), f"{model} is missing: run make models")
        np.save(self.tmp / "sr.npy", np.array(16000, np.int64))
        shapes = self.tmp / "shapes.json"
        shapes.write_text(json.dumps({"format": "dynvm-shapes/1", "models": {"silero": {
            "requests": 40, "other": 0, "shapes": [
                {"inputs": {"input": [1, 512], "state": [2, 1, 128], "sr": []}, "count": 30},
                {"inputs": {"input": [4, 512], "state": [2, 4, 128], "sr": []}, "count": 10},
            ]}}}))
        r = vmbench(model, "--dim", "input_0=1..16", "--dim", "state_1=input_0",
                    "--sizes-from", shapes, "--input", f"sr={self.tmp}/sr.npy", *FAST)
        runs, builds = tables(r.stdout)
        rows = runs[1]
        self.assertEqual([row["requests"] for row in rows], ["30", "10"])
        self.check_rows(rows, [row["size"] for row in rows])
        self.assertEqual("input=1x512 state=2x1x128", rows[0]["size"])  # sr: the same everywhere
        self.assertEqual("input=4x512 state=2x4x128", rows[1]["size"])
        for row in rows:
            self.assertIsNotNone(number(row["dynamic"]), row)
            self.assertIsNotNone(number(row["static"]), row)
        self.assertIn("dynamic/static, weighted by requests: ", r.stdout)
        self.assertEqual(len(builds), 4)

    def test_onnx_runtime_beside_it_when_the_peer_is_installed(self):
        r = vmbench(DEMO, "--sizes", "x=8x16", "--ort", *FAST)
        runs, _ = tables(r.stdout)
        if "ONNX Runtime: not measured" in r.stdout:
            self.assertNotIn("ORT", runs[1][0])
            self.skipTest("the ONNX Runtime peer is not installed here")
        row = runs[1][0]
        self.assertIsNotNone(number(row["ORT"]), row)
        self.check_rows(runs[1], ["x=8x16"])

    def test_errors_are_one_line(self):
        for args, status, message in [
            ([], 2, "no model given"),
            ([DEMO, "--threads", "0"], 2, "--threads: '0' is not a number"),
            ([DEMO, "--sizes", "y=3"], 2, "--sizes: the model has no input y"),
            ([DEMO, "--sizes", "x=3"], 2, "--sizes: input x has rank 2, not 1"),
            ([DEMO, "-o", "x.vmexe"], 2, "-o is not a vmbench option"),
            ([self.tmp / "missing.onnx"], 1, "cannot open"),
            ([DEMO, "--sizes-from", self.tmp / "none.json"], 1, "cannot open"),
        ]:
            r = vmbench(*args, expect=status)
            line = r.stderr.strip()
            self.assertTrue(line.startswith("vmbench: ") and "\n" not in line, line)
            self.assertIn(message, line)
        self.assertIn("usage: vmbench", vmbench("--help").stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
