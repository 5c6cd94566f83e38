// NonZero, Compress and their count (see nonzero.h).
#include "kernels/ops/nonzero.h"

#include <functional>

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

const tir::DataType kI64{vm::DType::kInt64, 1};

arith::Expr numel(const std::vector<arith::Expr>& shape) {
  arith::Expr n(1);
  for (const arith::Expr& d : shape) n = n * d;
  return n;
}

// The coordinates of flat (row-major) index j in `shape`.
std::vector<arith::Expr> unravel(const arith::Expr& j, const std::vector<arith::Expr>& shape) {
  std::vector<arith::Expr> at(shape.size());
  arith::Expr rest = j;
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = d == 0 ? rest : arith::floormod(rest, shape[d]);
    rest = arith::floordiv(rest, shape[d]);
  }
  return at;
}

tir::Expr is_nonzero(const te::TensorRef& x, const std::vector<arith::Expr>& at) {
  tir::Expr v = te::read(x, at);
  if (v.type().is_bool()) return v;
  return tir::compare(tir::CompareOp::kNe, v, tir::make_const(v.type(), 0));
}

tir::Expr one_if(const tir::Expr& cond) {
  return tir::select(cond, tir::make_const_int(kI64, 1), tir::make_const_int(kI64, 0));
}

// place[j]: how many of nonzero(0) .. nonzero(j - 1) hold, for j in [0, n).
te::TensorRef places(const arith::Expr& n,
                     const std::function<tir::Expr(const arith::Expr&)>& nonzero_at) {
  return te::scan(
      "place", {n}, 0, false, [&](const te::Indices&) { return tir::make_const_int(kI64, 0); },
      [&](const te::Indices& i, tir::Expr prev) {
        return prev + one_if(nonzero_at(i[0] - arith::Expr(1)));
      });
}

// The update of a scatter that stores value(j) at place[j] (and `lead` before it) where
// nonzero_at(j) holds.
te::ScatterUpdate to_place(const te::TensorRef& place, const arith::Expr& j,
                           std::vector<arith::Expr> lead, tir::Expr when, tir::Expr value) {
  te::ScatterUpdate u;
  arith::Var p("p");
  u.lets.emplace_back(p, te::read(place, {j}));
  u.when = std::move(when);
  u.at = std::move(lead);
  u.at.push_back(p);
  u.value = std::move(value);
  return u;
}

void check_countable(const char* what, const TensorType& x) {
  if (x.dtype == vm::DType::kFloat16 || x.dtype == vm::DType::kBFloat16) {
    user_error(what, ": ", dtype_suffix(x.dtype), " is not supported (cast it to f32 first)");
  }
}

}  // namespace

OpInstance count_nonzero(const TensorType& x) {
  check_countable("count_nonzero", x);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("N", {}, [&](const te::Indices&) {
    te::IterVar r = te::reduce_axis(numel(x.shape), "r");
    return te::sum(one_if(is_nonzero(in, unravel(r.var, x.shape))), {r});
  });
  return serial_scalar_op("count_nonzero_" + dtype_suffix(x.dtype), {in}, out);
}

OpInstance nonzero(const TensorType& x, const arith::Expr& count) {
  check_countable("nonzero", x);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  // A scalar is one element of rank 1.
  const std::vector<arith::Expr> shape = x.shape.empty() ? std::vector<arith::Expr>{1} : x.shape;
  auto nonzero_at = [&](const arith::Expr& j) {
    return is_nonzero(in, x.shape.empty() ? std::vector<arith::Expr>{} : unravel(j, shape));
  };
  const arith::Expr n = numel(shape);
  const auto rank = static_cast<int64_t>(shape.size());
  te::TensorRef place = places(n, nonzero_at);
  te::TensorRef out = te::scatter(
      "Y", {rank, count}, [&](const te::Indices&) { return tir::make_const_int(kI64, 0); },
      {rank, n},
      [&](const te::Indices& j, const te::TensorRef&) {
        // Coordinate j[0] of element j[1].
        std::vector<arith::Expr> at = unravel(j[1], shape);
        arith::Expr coordinate = at[0];
        for (int64_t d = 1; d < rank; ++d) {
          coordinate = arith::select(arith::eq(j[0], d), at[static_cast<size_t>(d)], coordinate);
        }
        return to_place(place, j[1], {j[0]}, nonzero_at(j[1]), tir::index_value(coordinate, kI64));
      });
  return injective_op("nonzero_" + dtype_suffix(x.dtype), {in}, out);
}

OpInstance compress(const TensorType& x, const TensorType& condition, const arith::Expr& count,
                    bool has_axis, int64_t axis_attr) {
  if (condition.dtype != vm::DType::kBool || condition.shape.size() != 1) {
    user_error("compress: the condition must be a one-dimensional bool tensor");
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef cond = te::placeholder("condition", condition.shape, condition.dtype);
  auto holds = [&](const arith::Expr& j) { return te::read(cond, {j}); };
  const std::string name = "compress_" + dtype_suffix(x.dtype);
  if (!has_axis) {
    const arith::Expr n = arith::min(condition.shape[0], numel(x.shape));
    te::TensorRef place = places(n, holds);
    te::TensorRef out = te::scatter(
        "Y", {count},
        [&](const te::Indices&) {
          return tir::make_const(tir::DataType{x.dtype, 1}, 0);
        },
        {n},
        [&](const te::Indices& j, const te::TensorRef&) {
          return to_place(place, j[0], {}, holds(j[0]), te::read(in, unravel(j[0], x.shape)));
        });
    return injective_op(name, {in, cond}, out);
  }
  if (x.shape.empty()) user_error("compress: a scalar has no axis");
  const size_t axis = normalize_axis("compress", axis_attr, x.shape.size());
  const arith::Expr n = arith::min(condition.shape[0], x.shape[axis]);
  te::TensorRef place = places(n, holds);
  // Which slice of x each output slice is.
  te::TensorRef source = te::scatter(
      "source", {count}, [&](const te::Indices&) { return tir::make_const_int(kI64, 0); }, {n},
      [&](const te::Indices& j, const te::TensorRef&) {
        return to_place(place, j[0], {}, holds(j[0]), tir::index_value(j[0], kI64));
      });
  std::vector<arith::Expr> shape = x.shape;
  shape[axis] = count;
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    arith::Var s("s");
    std::vector<arith::Expr> at(i.begin(), i.end());
    at[axis] = s;
    return tir::let_index(s, te::read(source, {i[axis]}), te::read(in, at));
  });
  return injective_op(name, {in, cond}, out);
}

}  // namespace dynvm::ops
