"""Small ONNX models, built with onnx.helper, whose results are worked out by hand in the
tests: they pin down how inputs are borrowed and outputs handed over, not the kernels."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8).SerializeToString()


def _f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def add_one():
    """y = x + 1, x: f32 [n]."""
    one = numpy_helper.from_array(np.array([1.0], np.float32), "one")
    return _model([helper.make_node("Add", ["x", "one"], ["y"])], [_f32("x", ["n"])],
                  [_f32("y", ["n"])], [one])


def add_rows():
    """y = x + b, x: f32 [rows, 3] (2-D, for strided and Fortran-ordered inputs)."""
    b = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "b")
    return _model([helper.make_node("Add", ["x", "b"], ["y"])], [_f32("x", ["rows", 3])],
                  [_f32("y", ["rows", 3])], [b])


def identity_twice():
    """y = x, z = x, as views of the input (Identity and Reshape)."""
    shape = numpy_helper.from_array(np.array([-1], np.int64), "flat")
    return _model([helper.make_node("Identity", ["x"], ["y"]),
                   helper.make_node("Reshape", ["x", "flat"], ["z"])],
                  [_f32("x", ["n"])], [_f32("y", ["n"]), _f32("z", ["n"])], [shape])


def constant_output():
    """c = the constant [1, 2, 3] whatever x is; y = x + c[0:1] keeps x used."""
    c = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "c")
    node = helper.make_node("Identity", ["c"], ["out_c"])
    add = helper.make_node("Add", ["x", "x"], ["y"])
    return _model([node, add], [_f32("x", ["n"])], [_f32("out_c", [3]), _f32("y", ["n"])], [c])


def to_bfloat16():
    """y = Cast(x, bfloat16)."""
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)
    return _model([node], [_f32("x", ["n"])],
                  [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, ["n"])])


def construct_sequence():
    """parts = SequenceConstruct(x, x + x), count = SequenceLength(parts)."""
    seq_type = helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, ["n"]))
    return _model([helper.make_node("Add", ["x", "x"], ["twice"]),
                   helper.make_node("SequenceConstruct", ["x", "twice"], ["parts"]),
                   helper.make_node("SequenceLength", ["parts"], ["count"])],
                  [_f32("x", ["n"])],
                  [helper.make_value_info("parts", seq_type),
                   helper.make_tensor_value_info("count", TensorProto.INT64, [])])


def last_of_sequence():
    """y = SequenceAt(xs, -1) + 0 (a new tensor), last = SequenceAt(xs, -1) (a view of the
    input), xs: a sequence of f32 [k, 2]."""
    seq_type = helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, ["k", 2]))
    minus_one = numpy_helper.from_array(np.array(-1, np.int64), "minus_one")
    zero = numpy_helper.from_array(np.array([0.0], np.float32), "zero")
    return _model([helper.make_node("SequenceAt", ["xs", "minus_one"], ["last"]),
                   helper.make_node("Add", ["last", "zero"], ["y"])],
                  [helper.make_value_info("xs", seq_type)],
                  [_f32("y", ["k", 2]), _f32("last", ["k", 2])], [minus_one, zero])


def onnx_model(builder):
    """The ModelProto of one of the builders above."""
    return onnx.load_from_string(builder())
