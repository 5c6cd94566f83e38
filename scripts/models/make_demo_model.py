#!/usr/bin/python3
"""Writes examples/demo/demo.onnx, the bundled dynamic model of `make demo`, and its
reference outputs (examples/demo/reference/), with Debian's python3-onnx and numpy only
(no PyTorch, so `make demo` never needs it).

The model (opset 16), for x: f32[seq, 16]:
  e      = mean(x * x)                              energy of the whole input
  xn     = If e > 1 then x / sqrt(e) else x         normalize only loud inputs
  h      = tanh(xn @ Wp + bp)                       projection, f32[seq, 16]
  Loop (at most 32 steps, while delta > 1e-4):      fixed-point refinement
    y'   = tanh(y @ Wr + h),  y0 = h                Wr is a contraction (norm ~0.8)
    delta = max |y' - y|
  outputs: y f32[seq, 16], steps i64[] (refinement steps taken), deltas f32[n_steps]
  (the Loop's scan output: one delta per step, so its length is data-dependent).

The references are an independent numpy implementation of the same math (float32), for
seq = 1, 7, 64 with inputs chosen so both If branches are taken. When ONNX Runtime is
available (onnxruntime-node, /work/shared/peer/setup.sh) the script asserts that it agrees
with numpy within rtol 1e-4 and that the step counts are equal.

Run from the repository root: /usr/bin/python3 scripts/models/make_demo_model.py"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_check  # noqa: E402

FEATURES = 16
MAX_STEPS = 32
TOL = 1e-4
ENERGY_THRESHOLD = 1.0
OUT_DIR = "examples/demo"
# seq -> scale of the standard-normal input: 0.5 and 0.8 keep mean(x*x) < 1 (no
# normalization), 2.0 makes it ~4 (normalized).
CASES = {1: 0.5, 7: 2.0, 64: 0.8}


def weights():
    rng = np.random.default_rng(20261122)
    wp = (rng.standard_normal((FEATURES, FEATURES)) / np.sqrt(FEATURES)).astype(np.float32)
    bp = (0.1 * rng.standard_normal(FEATURES)).astype(np.float32)
    # A Gaussian n x n matrix with element std s has spectral norm ~ 2 s sqrt(n): s = 1/10
    # gives ~0.8, so the refinement contracts and stops after 8 or 9 steps.
    wr = (rng.standard_normal((FEATURES, FEATURES)) / 10.0).astype(np.float32)
    return wp, bp, wr


def build_model(wp, bp, wr):
    f32 = TensorProto.FLOAT
    i64 = TensorProto.INT64

    def const(name, array):
        return helper.make_node("Constant", [], [name], name=name,
                                value=numpy_helper.from_array(np.asarray(array), name))

    then_branch = helper.make_graph(
        [helper.make_node("Sqrt", ["energy"], ["rms"]),
         helper.make_node("Div", ["x", "rms"], ["x_normalized"])],
        "normalize", [], [helper.make_tensor_value_info("x_normalized", f32, ["seq", FEATURES])])
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["x_as_is"])],
        "keep", [], [helper.make_tensor_value_info("x_as_is", f32, ["seq", FEATURES])])

    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "Wr"], ["yw"]),
         helper.make_node("Add", ["yw", "h"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["y_out"]),
         helper.make_node("Sub", ["y_out", "y_in"], ["change"]),
         helper.make_node("Abs", ["change"], ["abs_change"]),
         helper.make_node("ReduceMax", ["abs_change"], ["delta"], keepdims=0),
         helper.make_node("Greater", ["delta", "tol"], ["go_on"]),
         helper.make_node("Add", ["count_in", "one"], ["count_out"]),
         helper.make_node("Identity", ["delta"], ["delta_out"])],
        "refine",
        [helper.make_tensor_value_info("step", i64, []),
         helper.make_tensor_value_info("go_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", f32, ["seq", FEATURES]),
         helper.make_tensor_value_info("count_in", i64, [])],
        [helper.make_tensor_value_info("go_on", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", f32, ["seq", FEATURES]),
         helper.make_tensor_value_info("count_out", i64, []),
         helper.make_tensor_value_info("delta_out", f32, [])])

    nodes = [
        const("Wr", wr), const("tol", np.float32(TOL)), const("one", np.int64(1)),
        const("zero", np.int64(0)), const("max_steps", np.int64(MAX_STEPS)),
        const("true", np.bool_(True)), const("threshold", np.float32(ENERGY_THRESHOLD)),
        helper.make_node("Mul", ["x", "x"], ["x_squared"]),
        helper.make_node("ReduceMean", ["x_squared"], ["energy"], keepdims=0),
        helper.make_node("Greater", ["energy", "threshold"], ["loud"]),
        helper.make_node("If", ["loud"], ["xn"], name="normalize_if_loud",
                         then_branch=then_branch, else_branch=else_branch),
        helper.make_node("MatMul", ["xn", "Wp"], ["xw"]),
        helper.make_node("Add", ["xw", "bp"], ["proj"]),
        helper.make_node("Tanh", ["proj"], ["h"]),
        helper.make_node("Loop", ["max_steps", "true", "h", "zero"], ["y", "steps", "deltas"],
                         name="refine_loop", body=body),
    ]
    graph = helper.make_graph(
        nodes, "dynvm_demo",
        [helper.make_tensor_value_info("x", f32, ["seq", FEATURES])],
        [helper.make_tensor_value_info("y", f32, ["seq", FEATURES]),
         helper.make_tensor_value_info("steps", i64, []),
         helper.make_tensor_value_info("deltas", f32, ["n_steps"])],
        initializer=[numpy_helper.from_array(wp, "Wp"), numpy_helper.from_array(bp, "bp")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)],
                              producer_name="dynvm scripts/models/make_demo_model.py")
    model.ir_version = 8  # opset 16's IR version, readable by older runtimes
    onnx.checker.check_model(model, full_check=True)
    return model


def numpy_reference(x, wp, bp, wr):
    """The same math, written directly (float32 throughout, like the model)."""
    energy = np.mean(x * x, dtype=np.float32)
    loud = bool(energy > np.float32(ENERGY_THRESHOLD))
    xn = x / np.sqrt(energy) if loud else x
    h = np.tanh(xn @ wp + bp).astype(np.float32)
    y, deltas = h, []
    while len(deltas) < MAX_STEPS:
        y_next = np.tanh(y @ wr + h).astype(np.float32)
        delta = np.float32(np.max(np.abs(y_next - y)))
        deltas.append(delta)
        y = y_next
        if not delta > TOL:
            break
    # A delta this close to the tolerance could stop another implementation one step
    # earlier or later; the chosen inputs stay clear of it.
    margin = min(abs(float(d) - TOL) / TOL for d in deltas)
    assert margin > 1e-3, f"a delta is within {margin} of the tolerance; change the input"
    return loud, {"y": y, "steps": np.int64(len(deltas)),
                  "deltas": np.array(deltas, dtype=np.float32)}


def main():
    wp, bp, wr = weights()
    model = build_model(wp, bp, wr)
    os.makedirs(OUT_DIR, exist_ok=True)
    model_path = os.path.join(OUT_DIR, "demo.onnx")
    onnx.save(model, model_path)

    have_ort = ort_check.ort_available()
    branches = set()
    for seq, scale in CASES.items():
        rng = np.random.default_rng(1000 + seq)
        x = (scale * rng.standard_normal((seq, FEATURES))).astype(np.float32)
        loud, want = numpy_reference(x, wp, bp, wr)
        branches.add(loud)
        ort_check.save_case(os.path.join(OUT_DIR, "reference", f"seq_{seq}"), {"x": x}, want)
        line = (f"seq={seq:3d}: normalized={loud!s:5} steps={int(want['steps']):2d} "
                f"y[{seq},{FEATURES}] deltas[{len(want['deltas'])}]")
        if have_ort:
            got = ort_check.ort_run(model_path, {"x": x})
            diffs = {name: ort_check.compare(f"seq={seq} {name}", got[name], want[name])
                     for name in want}
            line += "  ORT vs numpy max abs diff: " + ", ".join(
                f"{name} {d:.2e}" for name, d in diffs.items())
        print(line)
    assert branches == {True, False}, "the cases must take both branches of the If"
    if not have_ort:
        print("ONNX Runtime (onnxruntime-node) not found: references not cross-checked")
    print(f"wrote {model_path} ({os.path.getsize(model_path)} bytes) and "
          f"{OUT_DIR}/reference/seq_{{{','.join(map(str, CASES))}}}")


if __name__ == "__main__":
    main()
