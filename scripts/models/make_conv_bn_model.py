#!/usr/bin/env python3
"""Writes tests/e2e/models/conv_bn/: Conv -> BatchNormalization -> Relu -> Conv (no bias) ->
BatchNormalization -> Add of a skip Conv -> BatchNormalization on a Conv read twice (not
foldable), with N, H, W symbolic, and references computed here in numpy from the ONNX
definitions (float64), at three sizes. What compiler/passes/fold_batch_norm folds, and what
it must leave alone.

  /usr/bin/python3 scripts/models/make_conv_bn_model.py   (from the repository root)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests/e2e/models/conv_bn")
rng = np.random.default_rng(7)


def conv(x, w, b=None, pad=0):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y if b is None else y + b[None, :, None, None]


def bn(x, s, b, m, v, eps):
    r = lambda a: a[None, :, None, None]
    return (x - r(m)) / np.sqrt(r(v) + eps) * r(s) + r(b)


def params(c):
    return (rng.uniform(0.5, 1.5, c), rng.uniform(-0.5, 0.5, c), rng.uniform(-1, 1, c),
            rng.uniform(0.5, 2.0, c))


def main():
    w1, b1 = rng.normal(0, 0.3, (8, 3, 3, 3)), rng.normal(0, 0.1, 8)
    w2 = rng.normal(0, 0.3, (4, 8, 1, 1))
    w3 = rng.normal(0, 0.3, (4, 3, 1, 1))
    bn1, bn2, bn3 = params(8), params(4), params(4)
    inits = {"w1": w1, "b1": b1, "w2": w2, "w3": w3}
    for name, p in (("bn1", bn1), ("bn2", bn2), ("bn3", bn3)):
        for part, v in zip(("s", "b", "m", "v"), p):
            inits[f"{name}_{part}"] = v
    bn_node = lambda name, x, y, eps: helper.make_node(
        "BatchNormalization", [x] + [f"{name}_{p}" for p in "sbmv"], [y], epsilon=eps, name=name)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        bn_node("bn1", "c1", "n1", 1e-5),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
        bn_node("bn2", "c2", "n2", 1e-3),
        # The skip conv's output is read by its BatchNormalization and by the Add: folding
        # would change what the Add reads, so it stays.
        helper.make_node("Conv", ["x", "w3"], ["c3"], name="conv3"),
        bn_node("bn3", "c3", "n3", 1e-5),
        helper.make_node("Add", ["n2", "n3"], ["s"]),
        helper.make_node("Add", ["s", "c3"], ["y"]),
    ]
    f32 = lambda name, dims: helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
    graph = helper.make_graph(
        nodes, "conv_bn", [f32("x", ["n", 3, "h", "w"])], [f32("y", ["n", 4, "h", "w"])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    os.makedirs(OUT, exist_ok=True)
    onnx.save(model, os.path.join(OUT, "model.onnx"))
    f = lambda a: a.astype(np.float32).astype(np.float64)  # the weights as stored
    for k, (n, h, w) in enumerate(((1, 5, 7), (2, 12, 9), (1, 1, 1))):
        x = rng.normal(0, 1, (n, 3, h, w)).astype(np.float32)
        c1 = conv(x.astype(np.float64), f(w1), f(b1), pad=1)
        r1 = np.maximum(bn(c1, *map(f, bn1), 1e-5), 0)
        n2 = bn(conv(r1, f(w2)), *map(f, bn2), 1e-3)
        c3 = conv(x.astype(np.float64), f(w3))
        y = n2 + bn(c3, *map(f, bn3), 1e-5) + c3
        case = os.path.join(OUT, "cases", str(k))
        os.makedirs(os.path.join(case, "inputs"), exist_ok=True)
        os.makedirs(os.path.join(case, "outputs"), exist_ok=True)
        np.save(os.path.join(case, "inputs", "x.npy"), x)
        np.save(os.path.join(case, "outputs", "y.npy"), y.astype(np.float32))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
