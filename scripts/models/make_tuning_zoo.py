#!/usr/bin/env python3
"""Writes the tuning zoo: one-operator ONNX models (a convolution of each kind, matrix
products, pooling, normalization, reductions, elementwise chains) with symbolic dims, and
the sizes each is tuned at. scripts/make-tuning-db.py tunes them beside the real models, so
that the cost model that ships with dynvm has seen every template at realistic sizes, not
only the kernels of three models. Weights are seeded; nothing here needs more than onnx.

  /usr/bin/python3 scripts/models/make_tuning_zoo.py OUT_DIR   (prints the table as JSON)
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(11)


def weight(name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)


def model(nodes, inputs, output, inits, opset=17):
    rank = len(inputs[0].type.tensor_type.shape.dim)
    out = helper.make_tensor_value_info(output, TensorProto.FLOAT, [f"y{i}" for i in range(rank)])
    g = helper.make_graph(nodes, "zoo", inputs, [out], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def x_input(dims, name="x"):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def conv(c_in, c_out, k, stride=1, group=1, act="Relu"):
    """NCHW conv (+ bias, + activation) with N, H, W symbolic."""
    pad = k // 2
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                              strides=[stride, stride], pads=[pad] * 4, group=group)]
    nodes.append(helper.make_node(act, ["c"], ["y"]))
    return model(nodes, [x_input(["n", c_in, "h", "w"])], "y",
                 [weight("w", [c_out, c_in // group, k, k]), weight("b", [c_out])])


def conv1d(c_in, c_out, k, stride=1):
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k], strides=[stride],
                              pads=[k // 2] * 2),
             helper.make_node("Relu", ["c"], ["y"])]
    return model(nodes, [x_input(["n", c_in, "t"])], "y", [weight("w", [c_out, c_in, k]), weight("b", [c_out])])


def matmul(k, n, bias=True):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"])]
    inits = [weight("w", [k, n])]
    if bias:
        nodes.append(helper.make_node("Add", ["m", "b"], ["y"]))
        inits.append(weight("b", [n]))
    else:
        nodes.append(helper.make_node("Relu", ["m"], ["y"]))
    return model(nodes, [x_input(["b", "s", k])], "y", inits)


def attention_scores(d):
    """[b, h, s, d] x [b, h, d, s] -> softmax: a batched product of two inputs."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["x", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["y"], axis=-1)]
    return model(nodes, [x_input(["b", 4, "s", d]), x_input(["b", 4, "s", d], "k")], "y", [])


def pool(kind, k, stride):
    node = helper.make_node(kind, ["x"], ["y"], kernel_shape=[k, k], strides=[stride, stride])
    return model([node], [x_input(["n", 32, "h", "w"])], "y", [])


def layer_norm(c):
    node = helper.make_node("LayerNormalization", ["x", "g", "be"], ["y"], axis=-1)
    return model([node], [x_input(["b", "s", c])], "y", [weight("g", [c]), weight("be", [c])])


def reduce_mean(c):
    node = helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=1)
    return model([node], [x_input(["n", c, "h", "w"])], "y", [], opset=17)


def gelu_chain(c):
    """x * sigmoid(1.702 x) + b: an elementwise chain the compiler fuses."""
    nodes = [helper.make_node("Mul", ["x", "k"], ["t"]), helper.make_node("Sigmoid", ["t"], ["s"]),
             helper.make_node("Mul", ["x", "s"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    k = numpy_helper.from_array(np.array([1.702], np.float32), "k")
    return model(nodes, [x_input(["b", "s", c])], "y", [k, weight("b", [c])])


def image(n, c, h, w):
    return f"x={n}x{c}x{h}x{w}"


# name -> (model, [--sizes specs])
def zoo():
    z = {}
    for c_in, c_out, hw in ((3, 16, (64, 112)), (16, 32, (32, 56)), (64, 64, (16, 28)),
                            (128, 128, (8, 14))):
        z[f"conv3x3_{c_in}_{c_out}"] = (conv(c_in, c_out, 3), [image(1, c_in, s, s) for s in hw])
    z["conv3x3_s2_32_64"] = (conv(32, 64, 3, stride=2), [image(1, 32, s, s) for s in (32, 64)])
    for c_in, c_out, hw in ((32, 64, (28, 56)), (128, 256, (8, 16)), (256, 64, (14, 20))):
        z[f"conv1x1_{c_in}_{c_out}"] = (conv(c_in, c_out, 1), [image(1, c_in, s, s) for s in hw])
    for c, k, hw in ((32, 3, (28, 56)), (96, 3, (14, 28)), (64, 5, (14, 28)), (128, 5, (7, 14))):
        z[f"dwconv{k}x{k}_{c}"] = (conv(c, c, k, group=c), [image(1, c, s, s) for s in hw])
    z["conv_ocr_line"] = (conv(64, 64, 3), [image(1, 64, 12, w) for w in (40, 160)])
    z["conv1d_64_64_k5"] = (conv1d(64, 64, 5), [f"x=1x64x{t}" for t in (64, 512)])
    z["conv1d_128_128_k3_s2"] = (conv1d(128, 128, 3, 2), [f"x=2x128x{t}" for t in (100, 400)])
    for k, n in ((256, 256), (512, 2048), (1024, 256), (64, 64)):
        z[f"matmul_{k}_{n}"] = (matmul(k, n), [f"x=1x{s}x{k}" for s in (16, 128)])
    z["matmul_relu_384_1536"] = (matmul(384, 1536, bias=False), [f"x=2x{s}x384" for s in (32, 200)])
    z["attention_scores_64"] = (attention_scores(64), [f"x=1x4x{s}x64;k=1x4x{s}x64" for s in (32, 256)])
    z["maxpool_3_2"] = (pool("MaxPool", 3, 2), [image(1, 32, s, s) for s in (32, 112)])
    z["avgpool_2_2"] = (pool("AveragePool", 2, 2), [image(1, 32, s, s) for s in (32, 112)])
    z["layernorm_384"] = (layer_norm(384), [f"x=1x{s}x384" for s in (32, 256)])
    z["reduce_mean_256"] = (reduce_mean(256), [image(1, 256, s, s) for s in (7, 28)])
    z["sigmoid_chain_512"] = (gelu_chain(512), [f"x=1x{s}x512" for s in (16, 512)])
    return z


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    table = {}
    for name, (m, sizes) in zoo().items():
        path = os.path.join(out, f"{name}.onnx")
        onnx.save(m, path)
        table[name] = {"path": path, "sizes": sizes}
    json.dump(table, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
