// TopK (see topk.h).
#include "kernels/ops/topk.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

// A constant k up to this many takes k selection passes (topk.h) instead of every
// element's place: 2k reductions over the row against n.
constexpr int64_t kMaxSelectionPasses = 32;

// Pass j picks the best element of the row that comes after pass j-1's pick in the order
// (value, then the lower index first): its value, a filtered max (or min), then the lowest
// index holding that value among those after. Exact with ties and infinities, since the
// order is total on (value, index).
std::pair<std::vector<te::TensorRef>, std::vector<te::TensorRef>> selection_passes(
    const te::TensorRef& in, const TensorType& x, size_t a, bool largest, int64_t k) {
  const tir::DataType i64{vm::DType::kInt64, 1};
  const tir::DataType t{x.dtype, 1};
  std::vector<arith::Expr> row_shape = x.shape;
  row_shape[a] = arith::make_int(1);
  const arith::Expr n = x.shape[a];
  std::vector<te::TensorRef> value, index;
  for (int64_t j = 0; j < k; ++j) {
    // Whether x[at] comes after pass j-1's pick (its row's element at `at` with axis a 0).
    auto after = [&](std::vector<arith::Expr> at, const arith::Expr& q) {
      tir::Expr v = te::read(in, at);
      at[a] = arith::make_int(0);
      tir::Expr pv = te::read(value[j - 1], at), pi = te::read(index[j - 1], at);
      return tir::logical_or(
          tir::compare(largest ? tir::CompareOp::kLt : tir::CompareOp::kGt, v, pv),
          tir::logical_and(tir::compare(tir::CompareOp::kEq, v, pv),
                           tir::compare(tir::CompareOp::kGt, tir::index_value(q), pi)));
    };
    const std::string pass = std::to_string(j);
    value.push_back(te::compute("M" + pass, row_shape, [&](const te::Indices& i) {
      te::IterVar q = te::reduce_axis(n, "q");
      std::vector<arith::Expr> at(i.begin(), i.end());
      at[a] = q.var;
      tir::Expr v = te::read(in, at);
      if (j > 0) {
        v = tir::select(
            after(at, q.var), v,
            te::reduce_identity(largest ? tir::ReduceOp::kMax : tir::ReduceOp::kMin, t));
      }
      return largest ? te::max_reduce(v, {q}) : te::min_reduce(v, {q});
    }));
    index.push_back(te::compute("W" + pass, row_shape, [&](const te::Indices& i) {
      te::IterVar q = te::reduce_axis(n, "q");
      std::vector<arith::Expr> at(i.begin(), i.end());
      at[a] = q.var;
      tir::Expr hit = tir::compare(tir::CompareOp::kEq, te::read(in, at),
                                   te::read(value[j], {i.begin(), i.end()}));
      if (j > 0) hit = tir::logical_and(hit, after(at, q.var));
      return te::min_reduce(
          tir::select(hit, tir::index_value(q.var), te::reduce_identity(tir::ReduceOp::kMin, i64)),
          {q});
    }));
  }
  return {value, index};
}

}  // namespace

OpInstance topk(const TensorType& x, int64_t axis, bool largest,
                const std::vector<arith::Expr>& out_shape) {
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (axis < -rank || axis >= rank) user_error("topk: axis ", axis, " is out of range");
  const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  if (out_shape.size() != x.shape.size()) user_error("topk: the output's rank is not x's");
  if (x.dtype == vm::DType::kBool) user_error("topk does not take bool");
  const tir::DataType i64{vm::DType::kInt64, 1};
  const arith::Expr n = x.shape[a];
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  const arith::Expr& k = out_shape[a];
  if (k.is_int_imm() && k.int_value() >= 1 && k.int_value() <= kMaxSelectionPasses) {
    auto [value, index] = selection_passes(in, x, a, largest, k.int_value());
    // Output j is pass j's pick.
    auto pick = [&, &value = value, &index = index](const char* name, bool indices) {
      return te::compute(name, out_shape, [&](const te::Indices& o) {
        std::vector<arith::Expr> row(o.begin(), o.end());
        row[a] = arith::make_int(0);
        const std::vector<te::TensorRef>& from = indices ? index : value;
        // A pass that found nothing (NaNs compare false, so a row with fewer numbers than k
        // runs out) leaves its index at the reduction's identity: clamped into the row.
        auto read = [&](size_t j) {
          tir::Expr v = te::read(from[j], row);
          return indices ? tir::min(v, tir::index_value(n - 1)) : v;
        };
        tir::Expr v = read(from.size() - 1);
        for (int64_t j = k.int_value() - 1; j-- > 0;) {
          v = tir::select(tir::index_value(arith::eq(o[a], j), tir::boolean()),
                          read(static_cast<size_t>(j)), v);
        }
        return v;
      });
    };
    te::TensorRef values = pick("V", false), positions = pick("I", true);
    OpInstance op;
    op.name = std::string(largest ? "topk_" : "bottomk_") + "passes_" +
              tir::to_string(tir::DataType{x.dtype, 1});
    op.inputs = {in};
    op.outputs = {values, positions};
    op.knobs = reduction_knobs(out_shape);
    op.schedule = [specs = op.knobs, value = value, index = index, values,
                   positions](const KnobValues& knobs) {
      te::Schedule s = te::create_schedule({values, positions});
      const bool parallel = knob_value(specs, knobs, "parallel") != 0;
      const int64_t unroll = knob_value(specs, knobs, "unroll");
      for (size_t j = 0; j < value.size(); ++j) {
        schedule_reduction(s, value[j], parallel, unroll);
        schedule_reduction(s, index[j], parallel, unroll);
      }
      return s;
    };
    return op;
  }
  // Place of each element in the output order: how many elements of its row come first.
  te::TensorRef place = te::compute("P", x.shape, [&](const te::Indices& i) {
    te::IterVar q = te::reduce_axis(n, "q");
    std::vector<arith::Expr> mine(i.begin(), i.end()), other = mine;
    other[a] = q.var;
    tir::Expr v = te::read(in, mine), w = te::read(in, other);
    tir::Expr first =
        tir::logical_or(tir::compare(largest ? tir::CompareOp::kGt : tir::CompareOp::kLt, w, v),
                        tir::logical_and(tir::compare(tir::CompareOp::kEq, w, v),
                                         tir::index_value(arith::lt(q.var, i[a]), tir::boolean())));
    return te::sum(tir::select(first, tir::make_const_int(i64, 1), tir::make_const_int(i64, 0)),
                   {q});
  });
  // Output j's index: the element whose place is j.
  auto gather = [&](const char* name) {
    return te::compute(name, out_shape, [&](const te::Indices& o) {
      te::IterVar e = te::reduce_axis(n, "e");
      std::vector<arith::Expr> at(o.begin(), o.end());
      at[a] = e.var;
      tir::Expr hit =
          tir::compare(tir::CompareOp::kEq, te::read(place, at), tir::index_value(o[a]));
      tir::Expr v = tir::index_value(e.var);
      return te::sum(tir::select(hit, v, tir::make_const(v.type(), 0)), {e});
    });
  };
  // The values are read at the indices found, not gathered a second time by place.
  te::TensorRef positions = gather("I");
  te::TensorRef values = te::compute("V", out_shape, [&](const te::Indices& o) {
    arith::Var raw("at");
    std::vector<arith::Expr> at(o.begin(), o.end());
    at[a] = raw;
    return tir::let_index(raw, te::read(positions, {o.begin(), o.end()}), te::read(in, at));
  });
  OpInstance op;
  op.name = std::string(largest ? "topk_" : "bottomk_") + tir::to_string(tir::DataType{x.dtype, 1});
  op.inputs = {in};
  op.outputs = {values, positions};
  op.knobs = reduction_knobs(out_shape);
  op.schedule = [specs = op.knobs, place, values, positions](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({values, positions});
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    const int64_t unroll = knob_value(specs, knobs, "unroll");
    for (const te::TensorRef& t : {place, values, positions}) {
      schedule_reduction(s, t, parallel, unroll);
    }
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
