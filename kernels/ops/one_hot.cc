// OneHot (see one_hot.h): the index is let-bound, wrapped once, and compared with the
// position along the new axis.
#include "kernels/ops/one_hot.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {

OpInstance one_hot(const TensorType& indices, const TensorType& values, int64_t axis,
                   const arith::Expr& depth) {
  const size_t a = normalize_axis("one_hot", axis, indices.shape.size() + 1);
  if (indices.dtype == vm::DType::kBool) user_error("one_hot: indices must be numbers, not bool");
  if (values.shape.size() != 1 ||
      (values.shape[0].is_int_imm() && values.shape[0].int_value() != 2)) {
    user_error("one_hot: values must be a 1-D tensor of two elements [off, on]");
  }
  std::vector<arith::Expr> shape = indices.shape;
  shape.insert(shape.begin() + static_cast<int64_t>(a), depth);
  te::TensorRef idx = te::placeholder("indices", indices.shape, indices.dtype);
  te::TensorRef val = te::placeholder("values", {arith::Expr(2)}, values.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> at(i.begin(), i.end());
    at.erase(at.begin() + static_cast<int64_t>(a));
    tir::Expr loaded = te::read(idx, at);
    if (vm::is_floating(indices.dtype)) loaded = tir::cast(tir::i64(), loaded);
    arith::Var raw("idx");
    arith::Expr wrapped = arith::select(arith::lt(raw, 0), raw + depth, raw);
    tir::Expr hot = tir::index_value(arith::eq(wrapped, i[a]), tir::boolean());
    return tir::let_index(
        raw, loaded,
        tir::select(hot, te::read(val, {arith::Expr(1)}), te::read(val, {arith::Expr(0)})));
  });
  return injective_op("one_hot_" + dtype_suffix(indices.dtype) + "_" + dtype_suffix(values.dtype),
                      {idx, val}, out);
}

}  // namespace dynvm::ops
