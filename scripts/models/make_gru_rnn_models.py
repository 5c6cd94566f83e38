#!/usr/bin/env python3
"""Writes tests/e2e/models/{gru_forward,gru_reverse_lbr,gru_bidirectional,rnn_forward,
rnn_reverse,rnn_bidirectional}: one ONNX GRU or RNN node each (hidden 16, input 8), symbolic seq and batch, and
reference outputs computed by ONNX Runtime (checked against a numpy implementation of the
ONNX GRU / RNN equations here, so the two agree before anything is written). Needs
python3-onnx, numpy and onnxruntime-node (/work/shared/peer/setup.sh).

  /usr/bin/python3 scripts/models/make_gru_rnn_models.py     # from the repository root"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HIDDEN, INPUT = 16, 8
CASES = ((1, 1), (4, 3), (11, 2))  # (seq, batch)

# name, op, direction, linear_before_reset, with B, with initial_h
MODELS = (
    ("gru_forward", "GRU", "forward", 0, True, True),
    ("gru_reverse_lbr", "GRU", "reverse", 1, True, False),
    ("gru_bidirectional", "GRU", "bidirectional", 1, True, True),
    ("rnn_forward", "RNN", "forward", 0, True, True),
    ("rnn_reverse", "RNN", "reverse", 0, False, False),
    ("rnn_bidirectional", "RNN", "bidirectional", 0, False, True),
)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_direction(op, x, w, r, b, h0, reverse, lbr):
    """ONNX GRU (gates z, r, h) or RNN, one direction, default activations."""
    H = HIDDEN
    seq = x.shape[0]
    h = h0.astype(np.float64)
    g = 3 if op == "GRU" else 1
    wb, rb = b[: g * H], b[g * H:]
    ys = [None] * seq
    for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
        if op == "RNN":
            h = np.tanh(x[t] @ w.T + h @ r.T + wb + rb)
        else:
            xw = x[t] @ w.T + wb
            z = sigmoid(xw[:, :H] + h @ r[:H].T + rb[:H])
            rr = sigmoid(xw[:, H:2 * H] + h @ r[H:2 * H].T + rb[H:2 * H])
            if lbr:
                n = np.tanh(xw[:, 2 * H:] + rr * (h @ r[2 * H:].T + rb[2 * H:]))
            else:
                n = np.tanh(xw[:, 2 * H:] + (rr * h) @ r[2 * H:].T + rb[2 * H:])
            h = (1 - z) * n + z * h
        ys[t] = h
    return np.stack(ys), h


def numpy_reference(op, x, w, r, b, h0, direction, lbr):
    dirs = w.shape[0]
    parts = [numpy_direction(op, x, w[d], r[d], b[d], h0[d],
                             direction == "reverse" or d == 1, lbr) for d in range(dirs)]
    y = np.stack([p[0] for p in parts], axis=1).astype(np.float32)
    y_h = np.stack([p[1] for p in parts]).astype(np.float32)
    return {"y": y, "y_h": y_h}


def build(name, op, direction, lbr, with_b, with_h0, rng):
    g = 3 if op == "GRU" else 1
    dirs = 2 if direction == "bidirectional" else 1
    w = (0.4 * rng.standard_normal((dirs, g * HIDDEN, INPUT))).astype(np.float32)
    r = (0.4 * rng.standard_normal((dirs, g * HIDDEN, HIDDEN))).astype(np.float32)
    b = (0.1 * rng.standard_normal((dirs, 2 * g * HIDDEN))).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")]
    inputs = ["x", "W", "R"]
    if with_b:
        inits.append(numpy_helper.from_array(b, "B"))
        inputs.append("B")
    else:
        b = np.zeros_like(b)
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", "batch", INPUT])]
    if with_h0:
        inputs += ["", "h0"] if with_b else ["", "", "h0"]
        graph_inputs.append(
            helper.make_tensor_value_info("h0", TensorProto.FLOAT, [dirs, "batch", HIDDEN]))
    attrs = {"hidden_size": HIDDEN, "direction": direction}
    if op == "GRU":
        attrs["linear_before_reset"] = lbr
    node = helper.make_node(op, inputs, ["y", "y_h"], name=op.lower(), **attrs)
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", dirs, "batch", HIDDEN]),
        helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [dirs, "batch", HIDDEN])]
    graph = helper.make_graph([node], name, graph_inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    return model, w, r, b, dirs


def main():
    if not ort_check.ort_available():
        sys.exit("ONNX Runtime (onnxruntime-node) is needed: sh /work/shared/peer/setup.sh")
    rng = np.random.default_rng(11)
    for name, op, direction, lbr, with_b, with_h0 in MODELS:
        model, w, r, b, dirs = build(name, op, direction, lbr, with_b, with_h0, rng)
        out_dir = os.path.join(ROOT, "tests", "e2e", "models", name)
        os.makedirs(out_dir, exist_ok=True)
        onnx.save(model, os.path.join(out_dir, "model.onnx"))
        for k, (seq, batch) in enumerate(CASES):
            x = rng.standard_normal((seq, batch, INPUT)).astype(np.float32)
            feeds = {"x": x}
            h0 = np.zeros((dirs, batch, HIDDEN), np.float32)
            if with_h0:
                h0 = (0.5 * rng.standard_normal((dirs, batch, HIDDEN))).astype(np.float32)
                feeds["h0"] = h0
            want = numpy_reference(op, x, w, r, b, h0, direction, lbr)
            got = ort_check.ort_run(os.path.join(out_dir, "model.onnx"), feeds)
            diffs = [ort_check.compare(f"{name} case {k} {n}", got[n], want[n]) for n in want]
            ort_check.save_case(os.path.join(out_dir, "cases", str(k)), feeds, got)
            print(f"{name} seq={seq} batch={batch}: ORT vs numpy max abs diff {max(diffs):.2e}")


if __name__ == "__main__":
    main()
