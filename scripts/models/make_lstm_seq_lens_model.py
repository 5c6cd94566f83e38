"""LSTM with peepholes (P) and per-batch sequence_lens (5, 2, 3 of 5 steps), forward, for
tests/e2e (EndToEnd.LstmPeepholesAndSequenceLensMatchNumpy). The reference is the ONNX
LSTM equations in float64 numpy, written out here: i and f see c_{t-1} through Pi and Pf,
o sees c_t through Po; past its length a batch element keeps its states and its Y is 0.

Run with /usr/bin/python3 from the repository root."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

OUT = "tests/e2e/models/lstm_peepholes_seq_lens"
S, B, I, H = 5, 3, 4, 3


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((S, B, I)).astype(np.float32)
    w = (rng.standard_normal((1, 4 * H, I)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((1, 4 * H, H)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((1, 8 * H)) * 0.1).astype(np.float32)
    p = (rng.standard_normal((1, 3 * H)) * 0.5).astype(np.float32)
    lens = np.array([5, 2, 3], dtype=np.int32)
    inits = [helper.make_tensor(n, TensorProto.FLOAT, v.shape, v.flatten())
             for n, v in [("W", w), ("R", r), ("B", b), ("P", p)]]
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "L", "", "", "P"], ["Y", "Yh", "Yc"],
                            hidden_size=H)
    graph = helper.make_graph(
        [node], "lstm_peepholes_seq_lens",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [S, B, I]),
         helper.make_tensor_value_info("L", TensorProto.INT32, [B])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["Y", "Yh", "Yc"]],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 7
    os.makedirs(OUT + "/cases/0/inputs", exist_ok=True)
    os.makedirs(OUT + "/cases/0/outputs", exist_ok=True)
    onnx.save(model, OUT + "/model.onnx")

    sig = lambda z: 1 / (1 + np.exp(-z))
    wd, rd, bd, pd = (a[0].astype(np.float64) for a in (w, r, b, p))
    h, c = np.zeros((B, H)), np.zeros((B, H))
    y = np.zeros((S, 1, B, H))
    for t in range(S):
        g = x[t] @ wd.T + h @ rd.T + bd[:4 * H] + bd[4 * H:]
        i = sig(g[:, :H] + pd[:H] * c)
        f = sig(g[:, 2 * H:3 * H] + pd[2 * H:] * c)
        c2 = f * c + i * np.tanh(g[:, 3 * H:])
        o = sig(g[:, H:2 * H] + pd[H:2 * H] * c2)
        h2 = o * np.tanh(c2)
        live = (t < lens)[:, None]
        h, c = np.where(live, h2, h), np.where(live, c2, c)
        y[t, 0] = np.where(live, h2, 0)
    np.save(OUT + "/cases/0/inputs/X.npy", x)
    np.save(OUT + "/cases/0/inputs/L.npy", lens)
    for name, v in [("Y", y), ("Yh", h[None]), ("Yc", c[None])]:
        np.save(OUT + "/cases/0/outputs/" + name + ".npy", v.astype(np.float32))


if __name__ == "__main__":
    main()
