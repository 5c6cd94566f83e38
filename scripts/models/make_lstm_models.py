#!/usr/bin/env python3
"""Writes tests/e2e/models/lstm_forward, lstm_reverse and lstm_bidirectional: one ONNX LSTM
node (hidden 12, input 5, bias, initial state for the forward and bidirectional ones),
symbolic seq and batch, and reference
outputs computed by ONNX Runtime (checked against a numpy implementation of the ONNX LSTM
equations here, so the two agree before anything is written). Needs python3-onnx, numpy
and onnxruntime-node (/work/shared/peer/setup.sh).

  /usr/bin/python3 scripts/models/make_lstm_models.py     # from the repository root"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HIDDEN, INPUT = 12, 5


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_lstm(x, w, r, b, h0, c0, reverse):
    """ONNX LSTM, one direction, default activations; gates in i, o, f, c order."""
    seq = x.shape[0]
    h, c = h0.astype(np.float64), c0.astype(np.float64)
    wb, rb = b[: 4 * HIDDEN], b[4 * HIDDEN:]
    ys = [None] * seq
    steps = range(seq - 1, -1, -1) if reverse else range(seq)
    for t in steps:
        g = x[t] @ w.T + h @ r.T + wb + rb
        i, o, f, cc = (g[:, k * HIDDEN:(k + 1) * HIDDEN] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
        h = sigmoid(o) * np.tanh(c)
        ys[t] = h
    y = np.stack(ys)[:, None].astype(np.float32)
    return y, h[None].astype(np.float32), c[None].astype(np.float32)


def numpy_reference(x, w, r, b, h0, c0, direction):
    """Every direction (the second of a bidirectional node runs in reverse), stacked."""
    parts = [numpy_lstm(x, w[d], r[d], b[d], h0[d], c0[d], direction == "reverse" or d == 1)
             for d in range(w.shape[0])]
    return (np.concatenate([p[0] for p in parts], axis=1),
            np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts]))


def build(name, direction, with_state, rng):
    dirs = 2 if direction == "bidirectional" else 1
    w = (0.4 * rng.standard_normal((dirs, 4 * HIDDEN, INPUT))).astype(np.float32)
    r = (0.4 * rng.standard_normal((dirs, 4 * HIDDEN, HIDDEN))).astype(np.float32)
    b = (0.1 * rng.standard_normal((dirs, 8 * HIDDEN))).astype(np.float32)
    inputs = ["x", "W", "R", "B", ""]
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", "batch", INPUT])]
    if with_state:
        inputs += ["h0", "c0"]
        for s in ("h0", "c0"):
            graph_inputs.append(
                helper.make_tensor_value_info(s, TensorProto.FLOAT, [dirs, "batch", HIDDEN]))
    node = helper.make_node("LSTM", inputs, ["y", "y_h", "y_c"], hidden_size=HIDDEN,
                            direction=direction, name="lstm")
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", dirs, "batch", HIDDEN]),
               helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [dirs, "batch", HIDDEN]),
               helper.make_tensor_value_info("y_c", TensorProto.FLOAT, [dirs, "batch", HIDDEN])]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"),
             numpy_helper.from_array(b, "B")]
    g = helper.make_graph([node], name, graph_inputs, outputs, initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    return model, w, r, b, dirs


def main():
    if not ort_check.ort_available():
        sys.exit("ONNX Runtime (onnxruntime-node) is needed: sh /work/shared/peer/setup.sh")
    rng = np.random.default_rng(7)
    for name, direction, with_state in (("lstm_forward", "forward", True),
                                        ("lstm_reverse", "reverse", False),
                                        ("lstm_bidirectional", "bidirectional", True)):
        model, w, r, b, dirs = build(name, direction, with_state, rng)
        out_dir = os.path.join(ROOT, "tests", "e2e", "models", name)
        os.makedirs(out_dir, exist_ok=True)
        onnx.save(model, os.path.join(out_dir, "model.onnx"))
        for k, (seq, batch) in enumerate(((1, 1), (5, 3), (17, 2))):
            x = rng.standard_normal((seq, batch, INPUT)).astype(np.float32)
            feeds = {"x": x}
            h0 = np.zeros((dirs, batch, HIDDEN), np.float32)
            c0 = np.zeros((dirs, batch, HIDDEN), np.float32)
            if with_state:
                h0 = (0.5 * rng.standard_normal((dirs, batch, HIDDEN))).astype(np.float32)
                c0 = (0.5 * rng.standard_normal((dirs, batch, HIDDEN))).astype(np.float32)
                feeds.update(h0=h0, c0=c0)
            want = dict(zip(("y", "y_h", "y_c"),
                            numpy_reference(x, w, r, b, h0, c0, direction)))
            got = ort_check.ort_run(os.path.join(out_dir, "model.onnx"), feeds)
            diffs = [ort_check.compare(f"{name} case {k} {n}", got[n], want[n]) for n in want]
            ort_check.save_case(os.path.join(out_dir, "cases", str(k)), feeds, got)
            print(f"{name} seq={seq} batch={batch}: ORT vs numpy max abs diff {max(diffs):.2e}")


if __name__ == "__main__":
    main()
