// TopK (see topk.h).
#include "kernels/ops/topk.h"

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {

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
  auto gather = [&](const char* name, bool indices) {
    return te::compute(name, out_shape, [&](const te::Indices& o) {
      te::IterVar e = te::reduce_axis(n, "e");
      std::vector<arith::Expr> at(o.begin(), o.end());
      at[a] = e.var;
      tir::Expr hit =
          tir::compare(tir::CompareOp::kEq, te::read(place, at), tir::index_value(o[a]));
      tir::Expr v = indices ? tir::index_value(e.var) : te::read(in, at);
      return te::sum(tir::select(hit, v, tir::make_const(v.type(), 0)), {e});
    });
  };
  te::TensorRef values = gather("V", false), positions = gather("I", true);
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
