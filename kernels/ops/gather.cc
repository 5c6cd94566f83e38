// Gather, GatherElements, GatherND and ReverseSequence (see gather.h): the index is a let-bound
// value of the indices tensor, wrapped and clamped in the index world before it addresses data.
#include "kernels/ops/gather.h"

#include <algorithm>

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

const tir::DataType kI64{vm::DType::kInt64, 1};

void check_types(const char* op, const TensorType& data, const TensorType& indices, size_t axis) {
  if (indices.dtype != vm::DType::kInt32 && indices.dtype != vm::DType::kInt64) {
    user_error(op, ": indices must be int32 or int64, got ", dtype_suffix(indices.dtype));
  }
  const arith::Expr& extent = data.shape[axis];
  if (extent.is_int_imm() && extent.int_value() == 0) {
    user_error(op, ": data's axis ", axis, " is empty, so no index is valid");
  }
}

// The element of data's `axis` (extent n) that a loaded index `raw` addresses: negative
// indices count from the end; what is still out of range is clamped (gather.h).
arith::Expr wrap_and_clamp(const arith::Var& raw, const arith::Expr& n) {
  arith::Expr wrapped = arith::select(arith::lt(raw, 0), raw + n, raw);
  return arith::max(arith::min(wrapped, n - arith::Expr(1)), arith::Expr(0));
}

}  // namespace

OpInstance gather(const TensorType& data, const TensorType& indices, int64_t axis_attr) {
  if (data.shape.empty()) user_error("gather: data must have rank >= 1");
  size_t axis = normalize_axis("gather", axis_attr, data.shape.size());
  check_types("gather", data, indices, axis);
  size_t q = indices.shape.size();
  std::vector<arith::Expr> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  te::TensorRef x = te::placeholder("data", data.shape, data.dtype);
  te::TensorRef idx = te::placeholder("indices", indices.shape, indices.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> at_indices(i.begin() + axis, i.begin() + axis + q);
    arith::Var raw("idx");
    std::vector<arith::Expr> at_data(i.begin(), i.begin() + axis);
    at_data.push_back(wrap_and_clamp(raw, data.shape[axis]));
    at_data.insert(at_data.end(), i.begin() + axis + q, i.end());
    return tir::let_index(raw, te::read(idx, at_indices), te::read(x, at_data));
  });
  return injective_op("gather_" + dtype_suffix(data.dtype) + "_" + dtype_suffix(indices.dtype),
                      {x, idx}, out);
}

OpInstance gather_elements(const TensorType& data, const TensorType& indices, int64_t axis_attr) {
  if (data.shape.empty()) user_error("gather_elements: data must have rank >= 1");
  size_t axis = normalize_axis("gather_elements", axis_attr, data.shape.size());
  check_types("gather_elements", data, indices, axis);
  if (indices.shape.size() != data.shape.size()) {
    user_error("gather_elements: indices have rank ", indices.shape.size(), ", data rank ",
               data.shape.size(), " (they must be equal)");
  }
  for (size_t d = 0; d < data.shape.size(); ++d) {
    const arith::Expr &di = indices.shape[d], &dd = data.shape[d];
    if (d == axis || arith::structural_equal(di, dd)) continue;
    if (di.is_int_imm() && dd.is_int_imm() && di.int_value() <= dd.int_value()) continue;
    user_error("gather_elements: indices dim ", d,
               " must equal data's (or be a constant no larger than it)");
  }
  te::TensorRef x = te::placeholder("data", data.shape, data.dtype);
  te::TensorRef idx = te::placeholder("indices", indices.shape, indices.dtype);
  te::TensorRef out = te::compute("Y", indices.shape, [&](const te::Indices& i) {
    arith::Var raw("idx");
    std::vector<arith::Expr> at(i.begin(), i.end());
    at[axis] = wrap_and_clamp(raw, data.shape[axis]);
    return tir::let_index(raw, te::read(idx, {i.begin(), i.end()}), te::read(x, at));
  });
  return injective_op(
      "gather_elements_" + dtype_suffix(data.dtype) + "_" + dtype_suffix(indices.dtype), {x, idx},
      out);
}

OpInstance gather_nd(const TensorType& data, const TensorType& indices, int64_t batch_dims) {
  const size_t r = data.shape.size(), q = indices.shape.size();
  if (r < 1 || q < 1) user_error("gather_nd: data and indices must have rank >= 1");
  if (indices.dtype != vm::DType::kInt32 && indices.dtype != vm::DType::kInt64) {
    user_error("gather_nd: indices must be int32 or int64, got ", dtype_suffix(indices.dtype));
  }
  if (batch_dims < 0 || static_cast<size_t>(batch_dims) >= std::min(r, q)) {
    user_error("gather_nd: batch_dims ", batch_dims, " must be below both ranks");
  }
  const auto b = static_cast<size_t>(batch_dims);
  const arith::Expr& last = indices.shape[q - 1];
  if (!last.is_int_imm()) user_error("gather_nd: the last dim of indices must be a constant");
  const auto k = static_cast<size_t>(last.int_value());
  if (k < 1 || b + k > r) {
    user_error("gather_nd: indices address ", k, " dims after ", b, " batch dims of data of rank ",
               r);
  }
  for (size_t d = 0; d < b; ++d) {
    if (!arith::structural_equal(data.shape[d], indices.shape[d])) {
      user_error("gather_nd: batch dim ", d, " of data and indices differ");
    }
  }
  for (size_t d = b; d < b + k; ++d) {
    if (data.shape[d].is_int_imm() && data.shape[d].int_value() == 0) {
      user_error("gather_nd: data's dim ", d, " is empty, so no index is valid");
    }
  }
  std::vector<arith::Expr> shape(indices.shape.begin(), indices.shape.end() - 1);
  shape.insert(shape.end(), data.shape.begin() + static_cast<int64_t>(b + k), data.shape.end());
  te::TensorRef x = te::placeholder("data", data.shape, data.dtype);
  te::TensorRef idx = te::placeholder("indices", indices.shape, indices.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> at_indices(i.begin(), i.begin() + static_cast<int64_t>(q - 1));
    std::vector<arith::Expr> at_data(i.begin(), i.begin() + static_cast<int64_t>(b));
    std::vector<arith::Var> raws;
    for (size_t j = 0; j < k; ++j) {
      raws.emplace_back("idx" + std::to_string(j));
      at_data.push_back(wrap_and_clamp(raws.back(), data.shape[b + j]));
    }
    at_data.insert(at_data.end(), i.begin() + static_cast<int64_t>(q - 1), i.end());
    tir::Expr value = te::read(x, at_data);
    for (size_t j = k; j-- > 0;) {
      std::vector<arith::Expr> at = at_indices;
      at.push_back(arith::make_int(static_cast<int64_t>(j)));
      value = tir::let_index(raws[j], te::read(idx, at), value);
    }
    return value;
  });
  return injective_op("gather_nd_" + dtype_suffix(data.dtype) + "_" + dtype_suffix(indices.dtype),
                      {x, idx}, out);
}

OpInstance count_out_of_range(const TensorType& data, const TensorType& indices, int64_t axis,
                              bool nd) {
  const size_t r = data.shape.size(), q = indices.shape.size();
  if (r < 1) user_error("count_out_of_range: data must have rank >= 1");
  if (indices.dtype != vm::DType::kInt32 && indices.dtype != vm::DType::kInt64) {
    user_error("count_out_of_range: indices must be int32 or int64, got ",
               dtype_suffix(indices.dtype));
  }
  const size_t first =
      nd ? static_cast<size_t>(axis) : normalize_axis("count_out_of_range", axis, r);
  size_t k = 1;  // how many data dims an index row addresses
  if (nd) {
    if (q < 1 || !indices.shape[q - 1].is_int_imm() || axis < 0) {
      user_error("count_out_of_range: nd indices need a constant last dim and batch_dims >= 0");
    }
    k = static_cast<size_t>(indices.shape[q - 1].int_value());
    if (first + k > r) user_error("count_out_of_range: indices address dims past data's rank");
  }
  te::TensorRef x = te::placeholder("data", data.shape, data.dtype);
  te::TensorRef idx = te::placeholder("indices", indices.shape, indices.dtype);
  te::TensorRef out = te::compute("N", {}, [&](const te::Indices&) {
    std::vector<te::IterVar> axes;
    std::vector<arith::Expr> at;
    for (size_t d = 0; d < q; ++d) {
      axes.push_back(te::reduce_axis(indices.shape[d], "r" + std::to_string(d)));
      at.push_back(axes.back().var);
    }
    // A scalar index is one element: a reduction of extent 1 that reads it.
    if (q == 0) axes.push_back(te::reduce_axis(arith::Expr(1), "r"));
    // The extent the element addresses: data's dim first + j, j its place in the last dim.
    arith::Expr n = data.shape[first + k - 1];
    for (size_t j = k - 1; j-- > 0;) {
      n = arith::select(arith::eq(at.back(), arith::make_int(static_cast<int64_t>(j))),
                        data.shape[first + j], n);
    }
    tir::Expr v = tir::cast(kI64, te::read(idx, at));
    tir::Expr outside =
        tir::logical_or(tir::compare(tir::CompareOp::kLt, v, tir::index_value(arith::Expr(0) - n)),
                        tir::compare(tir::CompareOp::kGe, v, tir::index_value(n)));
    return te::sum(tir::select(outside, tir::make_const_int(kI64, 1), tir::make_const_int(kI64, 0)),
                   axes);
  });
  return serial_scalar_op("count_out_of_range_" + dtype_suffix(indices.dtype), {x, idx}, out);
}

OpInstance reverse_sequence(const TensorType& x, const TensorType& sequence_lens, int64_t time_axis,
                            int64_t batch_axis) {
  if (x.shape.size() < 2) user_error("reverse_sequence: the input must have rank >= 2");
  const size_t t = normalize_axis("reverse_sequence", time_axis, x.shape.size());
  const size_t b = normalize_axis("reverse_sequence", batch_axis, x.shape.size());
  if (t == b) user_error("reverse_sequence: time_axis and batch_axis must differ");
  if (sequence_lens.dtype != vm::DType::kInt32 && sequence_lens.dtype != vm::DType::kInt64) {
    user_error("reverse_sequence: sequence_lens must be int32 or int64");
  }
  if (sequence_lens.shape.size() != 1) user_error("reverse_sequence: sequence_lens must be 1-D");
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef lens = te::placeholder("L", sequence_lens.shape, sequence_lens.dtype);
  const arith::Expr& steps = x.shape[t];
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    arith::Var len("len");
    arith::Expr n = arith::max(arith::min(arith::Expr(len), steps), arith::Expr(0));
    arith::Expr time = i[t];
    std::vector<arith::Expr> at(i.begin(), i.end());
    at[t] = arith::select(arith::lt(time, n), n - arith::Expr(1) - time, time);
    return tir::let_index(len, te::read(lens, {arith::Expr(i[b])}), te::read(in, at));
  });
  return injective_op(
      "reverse_sequence_" + dtype_suffix(x.dtype) + "_" + dtype_suffix(sequence_lens.dtype),
      {in, lens}, out);
}

}  // namespace dynvm::ops
