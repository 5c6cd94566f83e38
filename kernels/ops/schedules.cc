// Shared schedule templates (see schedules.h).
#include "kernels/ops/schedules.h"

#include "vm/error.h"

namespace dynvm::ops {
namespace {

// The number of elements when every dim is constant, else -1.
int64_t static_numel(const std::vector<arith::Expr>& shape) {
  int64_t n = 1;
  for (const arith::Expr& d : shape) {
    if (!d.is_int_imm()) return -1;
    n *= d.int_value();
  }
  return n;
}

constexpr int64_t kMinFusedIterations = 4;

int64_t default_parallel(const std::vector<arith::Expr>& shape) {
  int64_t n = static_numel(shape);
  return n < 0 || n >= kParallelThreshold ? 1 : 0;
}

// Whether index `e` mentions one of `vars`.
bool mentions(const arith::Expr& e, const std::vector<arith::Var>& vars) {
  for (const arith::Var& v : vars) {
    if (arith::uses_var(e, v.id())) return true;
  }
  return false;
}

// How many trailing axes of `stage` (an injective stage over op axes i0..i{r-1}) run as one
// flat loop without a division in any read: each tensor the body reads either indexes its
// own last dims by exactly those axes, in order, with the same extents past the first (so
// that its offset is the flat index plus a base), or mentions none of them (a per-channel
// scale of [1, c, 1, 1] over [n, c, h, w]). A read of a computed tensor (inlined later, its
// own reads unseen) that mentions them stops the run, as does a use of them as a value. At
// least 1 (the last axis alone).
size_t flat_trailing_axes(const te::Stage& stage) {
  const te::Indices& axes = stage.op_axis();
  const std::vector<arith::Expr>& shape = stage.tensor()->shape();
  const size_t rank = axes.size();
  size_t best = 1;
  for (size_t count = 2; count <= rank; ++count) {
    const std::vector<arith::Var> trailing(axes.end() - static_cast<std::ptrdiff_t>(count),
                                           axes.end());
    bool flat = true;
    tir::visit(stage.body(), [&](const tir::Expr& e) {
      if (!flat) return;
      // An axis the body computes with (a Trilu's column minus row) would come back from
      // the flat index by a division per element.
      if (e.kind() == tir::ExprKind::kIndexValue) {
        flat = !mentions(e->index, trailing);
        return;
      }
      if (e.kind() != tir::ExprKind::kTensorRead) return;
      const std::vector<arith::Expr>& at = e->indices;
      bool any = false;
      for (const arith::Expr& index : at) any = any || mentions(index, trailing);
      if (!any) return;
      const std::vector<arith::Expr>& dims = e->tensor->shape();
      if (e->tensor->kind() != te::Tensor::Kind::kPlaceholder || at.size() < count) {
        flat = false;
        return;
      }
      const size_t base = at.size() - count;
      for (size_t d = 0; d < base && flat; ++d) flat = !mentions(at[d], trailing);
      for (size_t j = 0; j < count && flat; ++j) {
        const arith::Expr& index = at[base + j];
        flat = index.kind() == arith::ExprKind::kVar && index->var_id == trailing[j].id() &&
               (j == 0 || arith::structural_equal(dims[base + j], shape[rank - count + j]));
      }
    });
    if (!flat) break;
    best = count;
  }
  return best;
}

}  // namespace

std::vector<KnobSpec> injective_knobs(const std::vector<arith::Expr>& shape) {
  // One zmm of f32 by default: math-heavy maps run 1.3x faster than at 8 lanes (an Erf over
  // [3136, 128]: 367 -> 284 us with parallel 0 as vmtune found it; a Whisper-style encoder
  // 4-7% faster), copies the same (their tails are masked either way).
  return {KnobSpec{"vector_width", {1, 4, 8, 16}, 16},
          KnobSpec{"parallel", {0, 1}, default_parallel(shape)}};
}

std::vector<KnobSpec> reduction_knobs(const std::vector<arith::Expr>& shape) {
  return {KnobSpec{"parallel", {0, 1}, default_parallel(shape)},
          KnobSpec{"unroll", {1, 2, 4, 8}, 1}};
}

int64_t knob_value(const std::vector<KnobSpec>& specs, const KnobValues& values,
                   const std::string& name) {
  for (const KnobSpec& spec : specs) {
    if (spec.name != name) continue;
    auto it = values.find(name);
    return it != values.end() ? it->second : spec.default_value;
  }
  internal_error(__FILE__, __LINE__, str_cat("schedule template asks for unknown knob ", name));
}

void schedule_injective(te::Schedule& s, const te::TensorRef& tensor, int64_t vector_width,
                        bool parallel) {
  te::Stage& stage = s[tensor];
  const size_t rank = stage.num_axes();
  if (rank == 0) return;
  if (vector_width < 1) user_error("vector_width must be positive, got ", vector_width);
  // The trailing axes that every read walks contiguously run as one loop: its vectors fill
  // whole (a per-channel scale-and-shift over [1, 128, h, w] at 14x14 filled 14 of 16 lanes
  // and paid a masked tail per row), and the leading axes keep the threads' iterations.
  // Where the leading axes are a few constant iterations (a batch of one and three
  // channels) the threads need the rows, so the last axis stays alone.
  size_t flat = flat_trailing_axes(stage);
  if (flat > 1 && parallel && flat < rank) {
    int64_t leading = 1;
    for (size_t i = 0; i < rank - flat && leading >= 0; ++i) {
      const arith::Expr& extent = stage.axis(i)->extent;
      leading = extent.is_int_imm() ? leading * extent.int_value() : -1;
    }
    if (leading >= 0 && leading < kMinFusedIterations) flat = 1;
  }
  const size_t lead = rank - flat;  // axes before the innermost loop
  te::IterVarRef last = stage.axis(lead);
  for (size_t i = lead + 1; i < rank; ++i) last = stage.fuse(last, stage.axis(i));
  te::IterVarRef outer_of_last = last;
  if (vector_width > 1) {
    auto [outer, inner] = stage.split(last, vector_width);
    stage.vectorize(inner);
    outer_of_last = outer;
  }
  if (!parallel) return;
  if (lead == 0) {
    stage.parallel(outer_of_last);
    return;
  }
  // The leading axes fuse into the parallel loop up to the first symbolic one after the
  // first axis: a broadcast read decomposes the fused index, and it then divides by
  // constants only ([n, 30, h, w, 16] * [n, 30, 1, 1, 16] divided by w and by h for every
  // vector: 33 us, against 7 us static). Where the constant axes give fewer than
  // kMinFusedIterations iterations (a batch of one and three channels), the first symbolic
  // axis fuses too, as the threads need iterations: one division by it per row of the
  // inner axes. (Every leading axis fused divided per vector: a squeeze-and-excitation scale
  // over [1, 3, 56, 40, 16] ran 35 us against 9.5 in NCHW.)
  size_t end = 1;
  int64_t constant_iterations = 1;
  while (end < lead && stage.axis(end)->extent.is_int_imm()) {
    constant_iterations *= stage.axis(end)->extent.int_value();
    ++end;
  }
  if (constant_iterations < kMinFusedIterations && end < lead) ++end;
  te::IterVarRef fused = stage.axis(0);
  for (size_t i = 1; i < end; ++i) fused = stage.fuse(fused, stage.axis(i));
  stage.parallel(fused);
}

void schedule_reduction(te::Schedule& s, const te::TensorRef& tensor, bool parallel,
                        int64_t unroll) {
  te::Stage& stage = s[tensor];
  if (unroll < 1) user_error("unroll must be positive, got ", unroll);
  if (unroll > 1 && stage.num_reduce_axes() > 0) {
    auto [outer, inner] = stage.split(stage.reduce_axis(stage.num_reduce_axes() - 1), unroll);
    stage.unroll(inner);
  }
  size_t rank = stage.num_axes();
  if (rank == 0 || !parallel) return;
  te::IterVarRef fused = stage.axis(0);
  for (size_t i = 1; i < rank; ++i) fused = stage.fuse(fused, stage.axis(i));
  stage.parallel(fused);
}

void schedule_column_reduction(te::Schedule& s, const te::TensorRef& tensor, bool parallel,
                               int64_t unroll, int64_t lanes) {
  te::Stage& stage = s[tensor];
  const size_t rank = stage.num_axes();
  if (rank == 0 || stage.num_reduce_axes() == 0 || lanes < 2) {
    schedule_reduction(s, tensor, parallel, unroll);
    return;
  }
  if (unroll < 1) user_error("unroll must be positive, got ", unroll);
  std::vector<te::IterVarRef> order;
  for (size_t i = 0; i + 1 < rank; ++i) order.push_back(stage.axis(i));
  auto [outer, inner] = stage.split(stage.axis(rank - 1), lanes);
  order.push_back(outer);
  te::IterVarRef fused = order.front();
  for (size_t r = 0; r < stage.num_reduce_axes(); ++r) order.push_back(stage.reduce_axis(r));
  if (unroll > 1) {
    auto [ro, ri] = stage.split(order.back(), unroll);
    order.back() = ro;
    order.push_back(ri);
    stage.unroll(ri);
  }
  order.push_back(inner);
  stage.reorder(order);
  stage.vectorize(inner);
  if (!parallel) return;
  for (size_t i = 1; i < rank; ++i) fused = stage.fuse(fused, order[i]);
  stage.parallel(fused);
}

std::function<te::Schedule(const KnobValues&)> injective_schedule(std::vector<KnobSpec> specs,
                                                                  te::TensorRef out) {
  return [specs = std::move(specs), out = std::move(out)](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    schedule_injective(s, out, knob_value(specs, knobs, "vector_width"),
                       knob_value(specs, knobs, "parallel") != 0);
    return s;
  };
}

std::vector<std::pair<arith::Var, int64_t>> last_dim_multiple(const std::vector<arith::Expr>& shape,
                                                              int64_t factor) {
  if (shape.empty() || shape.back().kind() != arith::ExprKind::kVar || factor <= 1) return {};
  return {{arith::Var(shape.back()), factor}};
}

OpInstance injective_op(std::string name, std::vector<te::TensorRef> inputs, te::TensorRef out) {
  OpInstance op;
  op.name = std::move(name);
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.knobs = injective_knobs(out->shape());
  op.schedule = injective_schedule(op.knobs, out);
  op.preferred_multiples = last_dim_multiple(out->shape(), 8);
  return op;
}

OpInstance serial_scalar_op(std::string name, std::vector<te::TensorRef> inputs,
                            te::TensorRef out) {
  OpInstance op;
  op.name = std::move(name);
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.schedule = [out](const KnobValues&) {
    te::Schedule s = te::create_schedule({out});
    schedule_reduction(s, out, false);
    return s;
  };
  return op;
}

}  // namespace dynvm::ops
