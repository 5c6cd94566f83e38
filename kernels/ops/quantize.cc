// QuantizeLinear and DequantizeLinear (see quantize.h): the scale and zero point read at the
// element's position along `axis` (or at none for per-tensor ones), the math in f32.
#include "kernels/ops/quantize.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;

// How x's elements find their scale / zero point: none (per tensor) or x's dim `axis`.
struct QuantParams {
  bool per_axis = false;
  size_t axis = 0;
};

QuantParams params(const char* op, const TensorType& x, const TensorType& scale,
                   const std::optional<TensorType>& zero_point, int64_t axis) {
  if (scale.dtype != vm::DType::kFloat32) user_error(op, ": the scale must be f32");
  if (scale.shape.size() > 1) user_error(op, ": the scale must be a scalar or 1-D");
  if (zero_point && zero_point->shape.size() != scale.shape.size()) {
    user_error(op, ": the zero point and the scale must have the same rank");
  }
  QuantParams p;
  if (scale.shape.empty()) return p;
  const arith::Expr& n = scale.shape[0];
  if (n.is_int_imm() && n.int_value() == 1) return p;  // one element: per tensor
  auto rank = static_cast<int64_t>(x.shape.size());
  if (axis < -rank || axis >= rank) {
    user_error(op, ": axis ", axis, " is out of range for rank ", rank);
  }
  p.per_axis = true;
  p.axis = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  const arith::Expr& extent = x.shape[p.axis];
  bool differ = n.is_int_imm() && extent.is_int_imm() ? n.int_value() != extent.int_value()
                                                      : !arith::structural_equal(n, extent);
  if (differ) user_error(op, ": the scale's length must equal x's dim ", p.axis);
  return p;
}

// The scale's / zero point's element for output indices `i`.
Expr param_at(const te::TensorRef& t, const QuantParams& p, const te::Indices& i) {
  if (t->shape().empty()) return te::read(t, std::vector<arith::Expr>{});
  return te::read(t, {p.per_axis ? arith::Expr(i[p.axis]) : arith::make_int(0)});
}

}  // namespace

OpInstance quantize_linear(const TensorType& x, const TensorType& scale,
                           const std::optional<TensorType>& zero_point, int64_t axis) {
  if (x.dtype != vm::DType::kFloat32 && x.dtype != vm::DType::kInt32) {
    user_error("quantize_linear: x must be f32 or int32, got ", dtype_suffix(x.dtype));
  }
  const vm::DType to = zero_point ? zero_point->dtype : vm::DType::kUInt8;
  if (to != vm::DType::kUInt8 && to != vm::DType::kInt8) {
    user_error("quantize_linear: the zero point must be uint8 or int8, got ", dtype_suffix(to));
  }
  QuantParams p = params("quantize_linear", x, scale, zero_point, axis);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef s = te::placeholder("S", scale.shape, scale.dtype);
  std::vector<te::TensorRef> inputs = {in, s};
  if (zero_point) inputs.push_back(te::placeholder("Z", zero_point->shape, zero_point->dtype));
  const double lo = to == vm::DType::kUInt8 ? 0 : -128, hi = to == vm::DType::kUInt8 ? 255 : 127;
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    Expr v = tir::cast(tir::f32(), te::read(in, idx)) / param_at(s, p, i);
    v = tir::call(tir::Intrinsic::kRound, v);  // half to even
    if (zero_point) v = v + tir::cast(tir::f32(), param_at(inputs[2], p, i));
    v = tir::max(tir::min(v, tir::make_const(tir::f32(), hi)), tir::make_const(tir::f32(), lo));
    return tir::cast(tir::DataType{to, 1}, v);
  });
  return injective_op("quantize_linear_" + dtype_suffix(x.dtype) + "_" + dtype_suffix(to) +
                          (p.per_axis ? "_axis" : ""),
                      std::move(inputs), out);
}

OpInstance dequantize_linear(const TensorType& x, const TensorType& scale,
                             const std::optional<TensorType>& zero_point, int64_t axis) {
  if (x.dtype != vm::DType::kUInt8 && x.dtype != vm::DType::kInt8 && x.dtype != vm::DType::kInt32) {
    user_error("dequantize_linear: x must be uint8, int8 or int32, got ", dtype_suffix(x.dtype));
  }
  if (zero_point && zero_point->dtype != x.dtype) {
    user_error("dequantize_linear: the zero point's dtype must be x's");
  }
  QuantParams p = params("dequantize_linear", x, scale, zero_point, axis);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef s = te::placeholder("S", scale.shape, scale.dtype);
  std::vector<te::TensorRef> inputs = {in, s};
  if (zero_point) inputs.push_back(te::placeholder("Z", zero_point->shape, zero_point->dtype));
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    Expr v = tir::cast(tir::f32(), te::read(in, idx));
    if (zero_point) v = v - tir::cast(tir::f32(), param_at(inputs[2], p, i));
    return v * param_at(s, p, i);
  });
  return injective_op("dequantize_linear_" + dtype_suffix(x.dtype) + (p.per_axis ? "_axis" : ""),
                      std::move(inputs), out);
}

}  // namespace dynvm::ops
