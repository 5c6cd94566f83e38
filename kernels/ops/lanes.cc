// Lane reductions and row-block fusion (see lanes.h).
#include "kernels/ops/lanes.h"

#include "kernels/arith/simplify.h"

namespace dynvm::ops {

te::TensorRef lane_reduce(
    const std::string& name, bool is_max, const std::vector<arith::Expr>& kept_shape,
    const arith::Expr& length, int64_t lanes,
    const std::function<tir::Expr(const te::Indices&, const arith::Expr&)>& element,
    LaneStages* stages) {
  auto reduce = [&](tir::Expr value, std::vector<te::IterVar> r) {
    return is_max ? te::max_reduce(std::move(value), std::move(r))
                  : te::sum(std::move(value), std::move(r));
  };
  const arith::Expr v = arith::make_int(lanes);
  const arith::Expr chunks = arith::simplify(arith::floordiv(length, v));
  const arith::Expr tail_start = arith::simplify(chunks * v);
  std::vector<arith::Expr> partial_shape = kept_shape;
  partial_shape.push_back(v);
  te::TensorRef partial = te::compute(name + "Lanes", partial_shape, [&](const te::Indices& i) {
    te::IterVar c = te::reduce_axis(chunks, "c");
    te::Indices kept(i.begin(), i.end() - 1);
    return reduce(element(kept, arith::Expr(c.var) * v + arith::Expr(i.back())), {c});
  });
  auto kept_of = [](const te::Indices& i) { return std::vector<arith::Expr>(i.begin(), i.end()); };
  te::TensorRef across = te::compute(name + "Across", kept_shape, [&](const te::Indices& i) {
    te::IterVar l = te::reduce_axis(v, "l");
    std::vector<arith::Expr> idx = kept_of(i);
    idx.push_back(l.var);
    return reduce(te::read(partial, idx), {l});
  });
  te::TensorRef tail = te::compute(name + "Tail", kept_shape, [&](const te::Indices& i) {
    te::IterVar t = te::reduce_axis(arith::simplify(length - tail_start), "t");
    return reduce(element(i, tail_start + arith::Expr(t.var)), {t});
  });
  te::TensorRef result = te::compute(name, kept_shape, [&](const te::Indices& i) {
    tir::Expr a = te::read(across, kept_of(i)), b = te::read(tail, kept_of(i));
    return is_max ? tir::max(a, b) : a + b;
  });
  stages->partials.push_back(partial);
  stages->scalars.insert(stages->scalars.end(), {across, tail});
  return result;
}

void schedule_lanes(te::Schedule& s, const te::TensorRef& partial, bool parallel) {
  te::Stage& stage = s[partial];
  const size_t rank = stage.num_axes();
  const te::IterVarRef lane = stage.axis(rank - 1);
  std::vector<te::IterVarRef> order;
  for (size_t d = 0; d + 1 < rank; ++d) order.push_back(stage.axis(d));
  order.push_back(stage.reduce_axis(0));
  order.push_back(lane);
  stage.reorder(order);
  stage.vectorize(lane);
  if (!parallel || rank < 2) return;
  te::IterVarRef fused = stage.axis(0);
  for (size_t d = 1; d + 1 < rank; ++d) fused = stage.fuse(fused, stage.axis(d));
  stage.parallel(fused);
}

te::IterVarRef fuse_while_constant(te::Stage& stage, const std::vector<te::IterVarRef>& outer,
                                   const std::vector<arith::Expr>& extents, te::IterVarRef inner,
                                   arith::Expr inner_extent) {
  for (size_t k = outer.size(); k-- > 0;) {
    if (!arith::simplify(inner_extent).is_int_imm()) break;
    inner = stage.fuse(outer[k], inner);
    inner_extent = inner_extent * extents[k];
  }
  return inner;
}

}  // namespace dynvm::ops
