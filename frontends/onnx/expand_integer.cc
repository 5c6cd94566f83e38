// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv (see expand_integer.h).
#include "frontends/onnx/expand_integer.h"

#include "vm/error.h"
#include "vm/tensor.h"

namespace dynvm::frontends::onnx_import {
namespace {

using compiler::Expr;

constexpr int64_t kOnnxFloat = 1, kOnnxInt32 = 6;

bool present(const NodeForm& node, size_t i) {
  return i < node.inputs.size() &&
         !(node.inputs[i].kind() == compiler::ExprKind::kTuple && node.inputs[i]->operands.empty());
}

class Expander {
 public:
  explicit Expander(const Emit& emit) : emit_(emit) {}

  Expr call(const std::string& op, std::vector<Expr> inputs, compiler::Attrs attrs = {}) {
    return emit_(std::to_string(step_++),
                 compiler::make_call(op, std::move(inputs), std::move(attrs)));
  }
  Expr cast(const Expr& x, int64_t to) { return call("Cast", {x}, {{"to", to}}); }
  // x reshaped to `shape` (one -1 takes the scalar's or vector's length).
  Expr reshape(const Expr& x, std::vector<int64_t> shape) {
    const auto rank = static_cast<int64_t>(shape.size());
    return call(
        "Reshape",
        {x, compiler::make_constant(vm::Tensor::from_vector(shape, {rank}, vm::DType::kInt64))});
  }
  // x as int32 minus its zero point (reshaped to `zp_shape` when given), if there is one.
  Expr centered(const Expr& x, const NodeForm& node, size_t zp,
                const std::vector<int64_t>& zp_shape = {}) {
    Expr v = cast(x, kOnnxInt32);
    if (!present(node, zp)) return v;
    Expr z = cast(node.inputs[zp], kOnnxInt32);
    if (!zp_shape.empty()) z = reshape(z, zp_shape);
    return call("Sub", {v, z});
  }
  // The int32 product: MatMul of A (zero point per row or scalar) and B (per column).
  Expr matmul(const NodeForm& node, size_t a, size_t a_zp, size_t b, size_t b_zp) {
    return call("MatMul", {centered(node.inputs[a], node, a_zp, {-1, 1}),
                           centered(node.inputs[b], node, b_zp)});
  }
  // The int32 convolution: W's zero point per output channel (or scalar).
  Expr conv(const NodeForm& node, size_t x, size_t x_zp, size_t w, size_t w_zp, size_t rank) {
    std::vector<int64_t> per_channel(rank, 1);
    per_channel[0] = -1;
    compiler::Attrs attrs = node.attrs;
    return call(
        "Conv",
        {centered(node.inputs[x], node, x_zp), centered(node.inputs[w], node, w_zp, per_channel)},
        attrs);
  }
  // QuantizeLinear(acc * scale, y_scale, y_zp) with acc int32.
  Expr requantize(const Expr& acc, const Expr& scale, const NodeForm& node, size_t y_scale,
                  size_t y_zp) {
    Expr real = call("Mul", {cast(acc, kOnnxFloat), scale});
    return call("QuantizeLinear", {real, node.inputs[y_scale], node.inputs[y_zp]});
  }

 private:
  const Emit& emit_;
  int step_ = 0;
};

}  // namespace

bool is_integer_linear_op(const std::string& op) {
  return op == "MatMulInteger" || op == "ConvInteger" || op == "QLinearMatMul" ||
         op == "QLinearConv";
}

compiler::Expr expand_integer_linear(const NodeForm& node, const Emit& emit,
                                     const std::string& where) {
  Expander e(emit);
  const std::string& op = node.op;
  auto need = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (!present(node, i)) user_error(where, ": ", op, " needs input ", i);
    }
  };
  // Conv's rank: kernel_shape's length + 2 when given, else 4 (2-D, the common case).
  auto conv_rank = [&]() -> size_t {
    auto it = node.attrs.find("kernel_shape");
    if (it == node.attrs.end()) return 4;
    return compiler::attr_ints(node.attrs, "kernel_shape", {}, where).size() + 2;
  };
  if (op == "MatMulInteger") {
    need(2);
    return e.matmul(node, 0, 2, 1, 3);
  }
  if (op == "ConvInteger") {
    need(2);
    return e.conv(node, 0, 2, 1, 3, conv_rank());
  }
  if (op == "QLinearMatMul") {
    need(8);
    Expr acc = e.matmul(node, 0, 2, 3, 5);
    Expr scale = e.call("Mul", {e.reshape(node.inputs[1], {-1, 1}), node.inputs[4]});
    return e.requantize(acc, scale, node, 6, 7);
  }
  if (op == "QLinearConv") {
    need(8);
    const size_t rank = conv_rank();
    Expr acc = e.conv(node, 0, 2, 3, 5, rank);
    std::vector<int64_t> per_channel(rank, 1);
    per_channel[1] = -1;  // [1, M, 1, ...] against [N, M, H, ...]
    if (present(node, 8)) acc = e.call("Add", {acc, e.reshape(node.inputs[8], per_channel)});
    Expr scale = e.call("Mul", {node.inputs[1], e.reshape(node.inputs[4], per_channel)});
    return e.requantize(acc, scale, node, 6, 7);
  }
  user_error(where, ": ", op, " is not an integer linear operator");
}

}  // namespace dynvm::frontends::onnx_import
