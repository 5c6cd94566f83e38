// ScatterElements, ScatterND (see scatter.h).
#include "kernels/ops/scatter.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

const char* reduction_name(ScatterReduction r) {
  switch (r) {
    case ScatterReduction::kAdd:
      return "add";
    case ScatterReduction::kMul:
      return "mul";
    case ScatterReduction::kMax:
      return "max";
    case ScatterReduction::kMin:
      return "min";
    case ScatterReduction::kNone:
      break;
  }
  return "none";
}

tir::Expr combine(ScatterReduction r, tir::Expr current, tir::Expr update) {
  switch (r) {
    case ScatterReduction::kAdd:
      return current + update;
    case ScatterReduction::kMul:
      return current * update;
    case ScatterReduction::kMax:
      return tir::max(current, update);
    case ScatterReduction::kMin:
      return tir::min(current, update);
    case ScatterReduction::kNone:
      break;
  }
  return update;
}

void check_index_dtype(const char* what, const TensorType& indices) {
  if (indices.dtype != vm::DType::kInt32 && indices.dtype != vm::DType::kInt64) {
    user_error(what, ": indices must be int32 or int64, got ", dtype_suffix(indices.dtype));
  }
}

// An index loaded as `raw` into an axis of extent n: negative ones count from the end.
arith::Expr from_end(const arith::Var& raw, const arith::Expr& n) {
  return arith::select(arith::lt(raw, 0), raw + n, raw);
}

std::string kernel_name(const char* op, ScatterReduction r, const TensorType& data,
                        const TensorType& indices) {
  return std::string(op) + "_" + reduction_name(r) + "_" + dtype_suffix(data.dtype) + "_" +
         dtype_suffix(indices.dtype);
}

}  // namespace

ScatterReduction scatter_reduction(const std::string& name) {
  for (ScatterReduction r :
       {ScatterReduction::kNone, ScatterReduction::kAdd, ScatterReduction::kMul,
        ScatterReduction::kMax, ScatterReduction::kMin}) {
    if (name == reduction_name(r)) return r;
  }
  user_error("scatter: unknown reduction '", name, "' (expected none, add, mul, max or min)");
}

OpInstance scatter_elements(const TensorType& data, const TensorType& indices,
                            const TensorType& updates, int64_t axis_attr,
                            ScatterReduction reduction) {
  const size_t r = data.shape.size();
  if (r == 0) user_error("scatter_elements: data must have rank >= 1");
  const size_t axis = normalize_axis("scatter_elements", axis_attr, r);
  check_index_dtype("scatter_elements", indices);
  if (indices.shape.size() != r || updates.shape.size() != r) {
    user_error("scatter_elements: data, indices and updates must have one rank (", r, ", ",
               indices.shape.size(), ", ", updates.shape.size(), ")");
  }
  if (updates.dtype != data.dtype) user_error("scatter_elements: updates' dtype is not data's");
  te::TensorRef x = te::placeholder("data", data.shape, data.dtype);
  te::TensorRef idx = te::placeholder("indices", indices.shape, indices.dtype);
  // updates has indices' shape (the kernel checks its argument against it).
  te::TensorRef upd = te::placeholder("updates", indices.shape, updates.dtype);
  te::TensorRef out = te::scatter(
      "Y", data.shape,
      [&](const te::Indices& i) {
        return te::read(x, {i.begin(), i.end()});
      },
      indices.shape,
      [&](const te::Indices& j, const te::TensorRef& self) {
        te::ScatterUpdate u;
        arith::Var raw("idx");
        std::vector<arith::Expr> at_j(j.begin(), j.end());
        u.lets.emplace_back(raw, te::read(idx, at_j));
        u.at = at_j;
        u.at[axis] = from_end(raw, data.shape[axis]);
        u.value = combine(reduction, te::read(self, u.at), te::read(upd, at_j));
        return u;
      });
  return injective_op(kernel_name("scatter_elements", reduction, data, indices), {x, idx, upd},
                      out);
}

OpInstance scatter_nd(const TensorType& data, const TensorType& indices, const TensorType& updates,
                      ScatterReduction reduction) {
  const size_t r = data.shape.size(), q = indices.shape.size();
  if (r == 0 || q == 0) user_error("scatter_nd: data and indices must have rank >= 1");
  check_index_dtype("scatter_nd", indices);
  const arith::Expr& last = indices.shape[q - 1];
  if (!last.is_int_imm()) user_error("scatter_nd: indices' last dim must be a constant");
  const int64_t k = last.int_value();
  if (k < 1 || static_cast<size_t>(k) > r) {
    user_error("scatter_nd: indices' last dim ", k, " must be in 1..", r);
  }
  if (updates.shape.size() != q - 1 + r - static_cast<size_t>(k)) {
    user_error("scatter_nd: updates must have rank ", q - 1 + r - static_cast<size_t>(k), ", got ",
               updates.shape.size());
  }
  if (updates.dtype != data.dtype) user_error("scatter_nd: updates' dtype is not data's");
  te::TensorRef x = te::placeholder("data", data.shape, data.dtype);
  te::TensorRef idx = te::placeholder("indices", indices.shape, indices.dtype);
  // updates is indices.shape[:-1] + data.shape[k:] (the kernel checks its argument).
  std::vector<arith::Expr> update_shape(indices.shape.begin(), indices.shape.end() - 1);
  update_shape.insert(update_shape.end(), data.shape.begin() + k, data.shape.end());
  te::TensorRef upd = te::placeholder("updates", update_shape, updates.dtype);
  te::TensorRef out = te::scatter(
      "Y", data.shape,
      [&](const te::Indices& i) {
        return te::read(x, {i.begin(), i.end()});
      },
      update_shape,
      [&](const te::Indices& j, const te::TensorRef& self) {
        te::ScatterUpdate u;
        std::vector<arith::Expr> lead(j.begin(), j.begin() + static_cast<long>(q - 1));
        for (int64_t t = 0; t < k; ++t) {
          arith::Var raw("idx" + std::to_string(t));
          std::vector<arith::Expr> at = lead;
          at.emplace_back(t);
          u.lets.emplace_back(raw, te::read(idx, at));
          u.at.push_back(from_end(raw, data.shape[static_cast<size_t>(t)]));
        }
        u.at.insert(u.at.end(), j.begin() + static_cast<long>(q - 1), j.end());
        u.value = combine(reduction, te::read(self, u.at), te::read(upd, {j.begin(), j.end()}));
        return u;
      });
  return injective_op(kernel_name("scatter_nd", reduction, data, indices), {x, idx, upd}, out);
}

OpInstance max_unpool(const TensorType& x, const TensorType& indices,
                      const std::vector<arith::Expr>& index_shape,
                      const std::vector<arith::Expr>& out_shape) {
  check_index_dtype("max_unpool", indices);
  if (out_shape.size() != x.shape.size() || index_shape.size() != x.shape.size()) {
    user_error("max_unpool: the output's rank is not x's");
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef idx = te::placeholder("I", x.shape, indices.dtype);
  te::TensorRef out = te::scatter(
      "Y", out_shape,
      [&](const te::Indices&) {
        return tir::make_const(tir::DataType{x.dtype, 1}, 0);
      },
      x.shape,
      [&](const te::Indices& j, const te::TensorRef&) {
        te::ScatterUpdate u;
        arith::Var flat("flat");
        std::vector<arith::Expr> at_j(j.begin(), j.end());
        u.lets.emplace_back(flat, te::read(idx, at_j));
        // Past the last element: out of range in dim 0, so nothing is written.
        arith::Expr rest = flat;
        u.at.resize(out_shape.size());
        for (size_t d = out_shape.size(); d-- > 1;) {
          u.at[d] = arith::floormod(rest, index_shape[d]);
          rest = arith::floordiv(rest, index_shape[d]);
        }
        u.at[0] = rest;
        u.value = te::read(in, at_j);
        return u;
      });
  return injective_op("max_unpool_" + dtype_suffix(x.dtype) + "_" + dtype_suffix(indices.dtype),
                      {in, idx}, out);
}

}  // namespace dynvm::ops
