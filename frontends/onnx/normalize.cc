// Supported operators and opset normalization (see normalize.h).
#include "frontends/onnx/normalize.h"

#include <map>
#include <set>

#include "vm/error.h"

namespace dynvm::frontends::onnx_import {
namespace {

// The opsets whose operator semantics the normalizer knows.
constexpr int64_t kOldestOpset = 7;
constexpr int64_t kNewestOpset = 21;

const std::set<std::string>& supported_ops() {
  static const std::set<std::string> ops = {
      // elementwise math, logic, comparison, activations
      "Abs", "Acos", "Add", "And", "Asin", "Atan", "Ceil", "Clip", "Cos", "Div", "Elu", "Equal",
      "Erf", "Exp", "Floor", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "LeakyRelu",
      "Less", "LessOrEqual", "Log", "Max", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pow", "PRelu",
      "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Softplus", "Sqrt", "Sub",
      "Sum", "Tanh", "Where", "Xor", "Cast", "Tan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
      "Softsign", "ThresholdedRelu", "Trilu", "Mean", "BitShift", "IsInf", "IsNaN", "Shrink",
      // reductions and normalizations
      "ArgMax", "ArgMin", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
      "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "ReduceLogSum", "Softmax",
      "LogSoftmax", "LayerNormalization", "BatchNormalization", "Hardmax", "LRN",
      "InstanceNormalization",
      // quantization
      "QuantizeLinear", "DequantizeLinear", "MatMulInteger", "ConvInteger", "QLinearMatMul",
      "QLinearConv",
      // linear algebra, convolution, pooling
      "MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
      "GlobalMaxPool",
      // data movement and shapes
      "Concat", "Constant", "ConstantOfShape", "CumSum", "Expand", "Flatten", "Gather",
      "GatherElements", "Identity", "Dropout", "Pad", "Range", "Reshape", "Resize", "Shape", "Size",
      "Slice", "Split", "Squeeze", "Tile", "Transpose", "Unsqueeze", "GatherND", "ReverseSequence",
      "DepthToSpace", "SpaceToDepth", "EyeLike", "TopK", "Upsample", "Scatter", "ScatterElements",
      "ScatterND", "NonZero", "Compress", "MaxUnpool", "NonMaxSuppression", "Unique", "OneHot",
      "GridSample", "Einsum", "Det", "RoiAlign",
      // signal processing and text features
      "DFT", "STFT", "MelWeightMatrix", "TfIdfVectorizer",
      // control flow and recurrences
      "If", "Loop", "Scan", "LSTM", "GRU", "RNN",
      // sequences and optionals (VM tuples)
      "SequenceConstruct", "SequenceEmpty", "SequenceLength", "SequenceAt", "SequenceInsert",
      "SequenceErase", "Optional", "OptionalHasElement", "OptionalGetElement"};
  return ops;
}

compiler::Expr i64_constant(const std::vector<int64_t>& values) {
  return compiler::make_constant(
      vm::Tensor::from_vector(values, {static_cast<int64_t>(values.size())}, vm::DType::kInt64));
}

compiler::Expr f32_scalar(double value) {
  return compiler::make_constant(vm::Tensor::from_vector(
      std::vector<float>{static_cast<float>(value)}, {}, vm::DType::kFloat32));
}

// Moves attribute `name` (ints) to input `index` (padding with absent inputs). Absent
// attribute: the input stays absent unless `required`.
void attr_to_input(NodeForm& node, const std::string& name, size_t index, bool required,
                   const std::string& where) {
  auto it = node.attrs.find(name);
  if (it == node.attrs.end()) {
    if (required) user_error(where, ": attribute '", name, "' is required at this opset");
    return;
  }
  const auto* ints = std::get_if<std::vector<int64_t>>(&it->second);
  if (ints == nullptr) user_error(where, ": attribute '", name, "' must be a list of ints");
  while (node.inputs.size() < index) node.inputs.push_back(absent_input());
  compiler::Expr input = i64_constant(*ints);
  if (node.inputs.size() == index) {
    node.inputs.push_back(input);
  } else {
    node.inputs[index] = input;
  }
  node.attrs.erase(it);
}

}  // namespace

compiler::Expr absent_input() { return compiler::make_tuple({}); }

// Operators whose semantics have not changed since an opset older than kOldestOpset (later
// versions only widened their types): accepted from that opset. Others changed before 7
// (Add's legacy broadcast, BatchNormalization's `spatial`, Reshape's shape attribute).
// InstanceNormalization-6 only dropped opset 1's unused `consumed_inputs`.
int64_t oldest_opset(const std::string& op) {
  static const std::map<std::string, int64_t> kOlder = {{"Elu", 6},
                                                        {"Selu", 6},
                                                        {"HardSigmoid", 6},
                                                        {"Not", 1},
                                                        {"Softplus", 1},
                                                        {"Softsign", 1},
                                                        {"GlobalAveragePool", 1},
                                                        {"GlobalMaxPool", 1},
                                                        {"InstanceNormalization", 6}};
  auto it = kOlder.find(op);
  return it != kOlder.end() ? it->second : kOldestOpset;
}

void check_supported(const std::string& op, int64_t opset, const std::string& where) {
  if (opset < oldest_opset(op) || opset > kNewestOpset) {
    user_error(where, ": opset ", opset, " is outside what dynvm supports (", oldest_opset(op),
               "..", kNewestOpset, ")");
  }
  if (!supported_ops().count(op)) user_error(where, ": operator ", op, " is not supported");
}

void normalize(NodeForm& node, int64_t opset, const std::string& where) {
  if (node.op == "Scatter") node.op = "ScatterElements";  // opsets 9-10, the same operator
  const std::string& op = node.op;
  if ((op == "Squeeze" || op == "Unsqueeze") && opset < 13) {
    attr_to_input(node, "axes", 1, op == "Unsqueeze", where);
  } else if (op == "ReduceSum" && opset < 13) {
    attr_to_input(node, "axes", 1, false, where);
  } else if (op.rfind("Reduce", 0) == 0 && op != "ReduceSum" && opset < 18) {
    attr_to_input(node, "axes", 1, false, where);
  } else if (op == "TopK" && opset < 10) {
    attr_to_input(node, "k", 1, true, where);
  } else if (op == "Split" && opset < 13) {
    attr_to_input(node, "split", 1, false, where);
  } else if (op == "Slice" && opset < 10) {
    attr_to_input(node, "starts", 1, true, where);
    attr_to_input(node, "ends", 2, true, where);
    attr_to_input(node, "axes", 3, false, where);
  } else if (op == "Pad" && opset < 11) {
    attr_to_input(node, "pads", 1, true, where);
    double value = compiler::attr_float(node.attrs, "value", 0.0, where);
    node.attrs.erase("value");
    node.inputs.push_back(f32_scalar(value));  // legacy Pad is float-only
  } else if (op == "Clip" && opset < 11) {
    // Legacy Clip is float-only; its bounds become f32 scalar inputs.
    double lo = compiler::attr_float(node.attrs, "min", -3.4028234663852886e38, where);
    double hi = compiler::attr_float(node.attrs, "max", 3.4028234663852886e38, where);
    node.attrs.erase("min");
    node.attrs.erase("max");
    node.inputs.push_back(f32_scalar(lo));
    node.inputs.push_back(f32_scalar(hi));
  } else if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13) {
    node.attrs["coerce_to_2d"] = int64_t{1};
    if (!node.attrs.count("axis")) node.attrs["axis"] = int64_t{1};  // the old default
  } else if (op == "Upsample") {
    // Resize-10 under another name: (X, scales) -> Resize(X, roi, scales), nearest or linear
    // ("bilinear" at opset 7) with asymmetric coordinates and floor for nearest; opset 7
    // gives the scales as an attribute.
    std::string mode = compiler::attr_string(node.attrs, "mode", "nearest", where);
    if (mode == "bilinear") mode = "linear";
    if (mode != "nearest" && mode != "linear") {
      user_error(where, ": Upsample mode '", mode, "' is not supported (nearest or linear)");
    }
    auto scales = node.attrs.find("scales");
    if (scales != node.attrs.end()) {
      const auto* values = std::get_if<std::vector<double>>(&scales->second);
      if (values == nullptr) user_error(where, ": attribute 'scales' must be a list of floats");
      std::vector<float> f(values->begin(), values->end());
      node.inputs.push_back(compiler::make_constant(
          vm::Tensor::from_vector(f, {static_cast<int64_t>(f.size())}, vm::DType::kFloat32)));
      node.attrs.erase(scales);
    }
    if (node.inputs.size() != 2) user_error(where, ": Upsample takes X and scales");
    node.op = "Resize";
    node.inputs.insert(node.inputs.begin() + 1, absent_input());
    node.attrs["mode"] = mode;
    node.attrs["coordinate_transformation_mode"] = std::string("asymmetric");
    node.attrs["nearest_mode"] = std::string("floor");
  } else if (op == "RoiAlign" && opset < 16) {
    // RoiAlign-10 has no coordinate_transformation_mode: it maps as output_half_pixel does
    // (no half-pixel shift, rois at least 1 x 1), where opset 16 defaults to half_pixel.
    node.attrs["coordinate_transformation_mode"] = std::string("output_half_pixel");
  } else if (op == "Resize" && opset < 11) {
    // (X, scales) -> (X, roi, scales); Resize-10 maps output to input coordinates as
    // x / scale and takes the floor for nearest.
    if (node.inputs.size() == 2) node.inputs.insert(node.inputs.begin() + 1, absent_input());
    node.attrs["coordinate_transformation_mode"] = std::string("asymmetric");
    node.attrs["nearest_mode"] = std::string("floor");
  }
}

}  // namespace dynvm::frontends::onnx_import
