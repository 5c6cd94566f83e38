// Softmax, log_softmax, layer_norm (see norm.h). Each is a chain of reduction stages over
// the normalised axes kept as size 1 (so the output reads them by broadcasting) and an
// elementwise output. Softmax over the last axis (the common case: attention, a
// classifier's classes) and layer norm over the last axis reduce in vector lanes
// (lane_reduce): 8x faster on PP-OCR's 6625 classes than one scalar loop per row. Their
// stages are computed per block of 8 rows at the output's row loop (lane_schedule), so
// a row is read from memory once. Softmax over other axes that leave the last one out
// (the channels of NCHW) reduces per row of kept positions with the last axis in vector
// lanes (across_schedule).
#include "kernels/ops/norm.h"

#include <functional>
#include <optional>

#include "kernels/arith/simplify.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/lanes.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;
using tir::Intrinsic;

// The keepdims shape with dims in `reduced` set to 1, and readers for it.
struct RowGeometry {
  std::vector<bool> reduced;
  std::vector<arith::Expr> kept_shape;
  arith::Expr count = arith::make_int(1);

  std::vector<arith::Expr> kept_indices(const te::Indices& i) const {
    std::vector<arith::Expr> idx;
    for (size_t d = 0; d < reduced.size(); ++d) {
      idx.push_back(reduced[d] ? arith::make_int(0) : arith::Expr(i[d]));
    }
    return idx;
  }
  // Input indices from keepdims indices and reduce axes.
  std::vector<arith::Expr> input_indices(const te::Indices& i,
                                         const std::vector<te::IterVar>& r) const {
    std::vector<arith::Expr> idx;
    size_t k = 0;
    for (size_t d = 0; d < reduced.size(); ++d) {
      idx.push_back(reduced[d] ? arith::Expr(r[k++].var) : arith::Expr(i[d]));
    }
    return idx;
  }
  std::vector<te::IterVar> axes(const TensorType& x) const {
    std::vector<te::IterVar> r;
    for (size_t d = 0; d < reduced.size(); ++d) {
      if (reduced[d]) r.push_back(te::reduce_axis(x.shape[d], "r" + std::to_string(d)));
    }
    return r;
  }
};

RowGeometry row_geometry(const TensorType& x, const std::vector<size_t>& axes) {
  RowGeometry g;
  g.reduced.assign(x.shape.size(), false);
  for (size_t a : axes) g.reduced[a] = true;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    g.kept_shape.push_back(g.reduced[d] ? arith::make_int(1) : x.shape[d]);
    if (g.reduced[d]) g.count = g.count * x.shape[d];
  }
  return g;
}

// The injective template's knobs plus the reduction template's unroll.
std::vector<KnobSpec> norm_knobs(const std::vector<arith::Expr>& shape) {
  std::vector<KnobSpec> knobs = injective_knobs(shape);
  knobs.push_back(reduction_knobs(shape).back());
  return knobs;
}

// `out` and then `row_outputs`, one value per row (layer_norm's Mean / InvStdDev): those
// are scheduled injective without vectors, their last dim being a kept 1.
te::Schedule create_norm_schedule(const te::TensorRef& out,
                                  const std::vector<te::TensorRef>& row_outputs, bool parallel) {
  std::vector<te::TensorRef> outputs = {out};
  outputs.insert(outputs.end(), row_outputs.begin(), row_outputs.end());
  te::Schedule s = te::create_schedule(outputs);
  for (const te::TensorRef& t : row_outputs) schedule_injective(s, t, 1, parallel);
  return s;
}

std::function<te::Schedule(const KnobValues&)> norm_schedule(
    std::vector<KnobSpec> specs, te::TensorRef out, std::vector<te::TensorRef> stages,
    std::vector<te::TensorRef> row_outputs = {}) {
  return [=](const KnobValues& knobs) {
    bool parallel = knob_value(specs, knobs, "parallel") != 0;
    te::Schedule s = create_norm_schedule(out, row_outputs, parallel);
    int64_t unroll = knob_value(specs, knobs, "unroll");
    for (const te::TensorRef& t : stages) schedule_reduction(s, t, parallel, unroll);
    schedule_injective(s, out, knob_value(specs, knobs, "vector_width"), parallel);
    return s;
  };
}

// Rows of the output per block of the row-local schedule: each stage's buffer holds a block
// (a softmax's exponentials: 8 rows of the last axis), so a block's passes stay in the
// cache and a workspace is allocated once per block.
constexpr int64_t kRowBlock = 8;

// The schedule of an op whose reductions are lane_reduce stages: the partials as vector
// loops, the lanes and tails as reductions, `combined` (lane_reduce's results) and
// `elementwise` (full-size intermediates) like the output, vectorized. With rows (rank >= 2)
// and no row outputs, every stage is computed per block of kRowBlock rows of the output
// (the last row dim split, fused with the dims outside it into the parallel loop, or with a
// symbolic number of blocks parallel outermost and those dims inside), so a
// row is read from memory once and written once; otherwise every stage runs at the root
// over the whole tensor.
std::function<te::Schedule(const KnobValues&)> lane_schedule(
    std::vector<KnobSpec> specs, te::TensorRef out, LaneStages stages,
    std::vector<te::TensorRef> combined, std::vector<te::TensorRef> row_outputs = {},
    std::vector<te::TensorRef> elementwise = {}) {
  return [=](const KnobValues& knobs) {
    bool parallel = knob_value(specs, knobs, "parallel") != 0;
    const int64_t vector_width = knob_value(specs, knobs, "vector_width");
    te::Schedule s = create_norm_schedule(out, row_outputs, parallel);
    te::Stage& y = s[out];
    const size_t rank = y.num_axes();
    if (!row_outputs.empty() || rank < 2) {
      for (const te::TensorRef& p : stages.partials) schedule_lanes(s, p, parallel);
      for (const te::TensorRef& t : stages.scalars) schedule_reduction(s, t, parallel);
      for (const te::TensorRef& t : combined) schedule_injective(s, t, 1, parallel);
      for (const te::TensorRef& t : elementwise) schedule_injective(s, t, vector_width, parallel);
      schedule_injective(s, out, vector_width, parallel);
      return s;
    }
    const std::vector<arith::Expr>& shape = y.tensor()->shape();
    std::vector<te::IterVarRef> outer;
    std::vector<arith::Expr> extents;
    for (size_t d = 0; d + 2 < rank; ++d) {
      outer.push_back(y.axis(d));
      extents.push_back(shape[d]);
    }
    auto [block, in_block] = y.split(y.axis(rank - 2), kRowBlock);
    const arith::Expr blocks = arith::floordiv(shape[rank - 2] + (kRowBlock - 1), kRowBlock);
    te::IterVarRef rows;  // the loop a block of rows is computed at
    te::IterVarRef threads;
    if (arith::simplify(blocks).is_int_imm()) {
      rows = threads = fuse_while_constant(y, outer, extents, block, blocks);
    } else {
      // A symbolic number of blocks: they run in parallel outermost, the outer dims inside
      // each (as attention's blocks do). With the outer dims outside, each (batch, head) of a
      // [n, 4, s, s] softmax was a parallel loop of s / 8 blocks of its own, too short to
      // share (2 threads: 100 us at s = 128, static 50; now 57). Fused with the constant
      // outer dims instead, the block's quotient is not affine in the parallel variable, its
      // rows keep a guard loop_partition cannot cut, and the kernel ran 74 us.
      std::vector<te::IterVarRef> order{block};
      order.insert(order.end(), outer.begin(), outer.end());
      order.insert(order.end(), {in_block, y.axis(y.num_axes() - 1)});
      y.reorder(order);
      threads = block;
      rows = outer.empty() ? block : outer.back();
    }
    auto vectorize_last = [&](te::Stage& stage) {
      te::IterVarRef last = stage.axis(stage.num_axes() - 1);
      if (vector_width > 1) last = stage.split(last, vector_width).second;
      stage.vectorize(last);
    };
    vectorize_last(y);
    if (parallel) y.parallel(threads);
    for (const te::TensorRef& p : stages.partials) {
      s[p].compute_at(y, rows);
      schedule_lanes(s, p, false);
    }
    for (const te::TensorRef& t : stages.scalars) s[t].compute_at(y, rows);
    for (const te::TensorRef& t : combined) s[t].compute_at(y, rows);
    for (const te::TensorRef& t : elementwise) {
      s[t].compute_at(y, rows);
      vectorize_last(s[t]);
    }
    return s;
  };
}

// The schedule of a normalization over axes that leave the last one out (softmax over the
// channels of NCHW): the output's kept axes run outside (fused_while_constant, parallel), the
// reduced ones inside them, the last axis innermost as a vector loop. The row stages (`stages`,
// producers first) are computed at the fused kept loop, each with its reduction loops
// outside its last axis, which is again a vector loop: every pass over a row's elements
// runs in vector lanes and stays in the cache, where a per-position reduction would run
// its short reduction innermost in scalars over strided elements.
std::function<te::Schedule(const KnobValues&)> across_schedule(std::vector<KnobSpec> specs,
                                                               te::TensorRef out,
                                                               std::vector<te::TensorRef> stages,
                                                               std::vector<bool> reduced) {
  return [=](const KnobValues& knobs) {
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    te::Schedule s = te::create_schedule({out});
    te::Stage& y = s[out];
    const size_t rank = reduced.size();
    const std::vector<arith::Expr>& shape = y.tensor()->shape();
    std::vector<te::IterVarRef> kept, order;
    std::vector<arith::Expr> kept_extents;
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (!reduced[d]) {
        kept.push_back(y.axis(d));
        kept_extents.push_back(shape[d]);
      }
    }
    order = kept;
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (reduced[d]) order.push_back(y.axis(d));
    }
    order.push_back(y.axis(rank - 1));
    y.reorder(order);
    y.vectorize(y.axis(rank - 1));
    std::optional<te::IterVarRef> row;
    if (!kept.empty()) {
      const te::IterVarRef last_kept = kept.back();
      const arith::Expr last_extent = kept_extents.back();
      kept.pop_back();
      kept_extents.pop_back();
      row = fuse_while_constant(y, kept, kept_extents, last_kept, last_extent);
      if (parallel) y.parallel(*row);
    }
    for (const te::TensorRef& t : stages) {
      te::Stage& stage = s[t];
      if (row) stage.compute_at(y, *row);
      std::vector<te::IterVarRef> inner;
      for (size_t d = 0; d + 1 < rank; ++d) inner.push_back(stage.axis(d));
      for (size_t r = 0; r < stage.num_reduce_axes(); ++r) inner.push_back(stage.reduce_axis(r));
      inner.push_back(stage.axis(rank - 1));
      stage.reorder(inner);
      stage.vectorize(stage.axis(rank - 1));
    }
    return s;
  };
}

// The softmax output from the row max `m` and the row sum of exponentials `s`:
// exp(x - m) / s, or (x - m) - log(s) for log_softmax.
te::TensorRef softmax_output(bool log, const TensorType& x, const te::TensorRef& in,
                             const RowGeometry& g, const te::TensorRef& m, const te::TensorRef& s) {
  return te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    Expr shifted = te::read(in, idx) - te::read(m, g.kept_indices(i));
    Expr sum = te::read(s, g.kept_indices(i));
    if (log) return shifted - tir::call(Intrinsic::kLog, sum);
    return tir::call(Intrinsic::kExp, shifted) / sum;
  });
}

// A softmax instance over `in` -> `out`, its schedule left to the caller.
OpInstance softmax_instance(bool log, const TensorType& x, const te::TensorRef& in,
                            const te::TensorRef& out) {
  OpInstance op;
  op.name = std::string(log ? "log_softmax_" : "softmax_") + dtype_suffix(x.dtype);
  op.inputs = {in};
  op.outputs = {out};
  op.knobs = norm_knobs(x.shape);
  op.preferred_multiples = last_dim_multiple(x.shape, 8);
  return op;
}

// Softmax over the last (contiguous) axis with vectorized reductions (lane_reduce): the
// max and the sum of exponentials each run as a vector loop over the row.
OpInstance softmax_last_axis(bool log, const TensorType& x) {
  const size_t last = x.shape.size() - 1;
  RowGeometry g = row_geometry(x, {last});
  const arith::Expr length = x.shape[last];
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  auto at = [&](const te::Indices& kept, const arith::Expr& pos) {
    std::vector<arith::Expr> idx(kept.begin(), kept.end());
    idx[last] = pos;
    return te::read(in, idx);
  };
  LaneStages stages;
  te::TensorRef m = lane_reduce("M", true, g.kept_shape, length, kLanes, at, &stages);
  if (log) {
    te::TensorRef s = lane_reduce(
        "S", false, g.kept_shape, length, kLanes,
        [&](const te::Indices& kept, const arith::Expr& pos) {
          std::vector<arith::Expr> k(kept.begin(), kept.end());
          return tir::call(Intrinsic::kExp, at(kept, pos) - te::read(m, k));
        },
        &stages);
    te::TensorRef out = softmax_output(log, x, in, g, m, s);
    OpInstance op = softmax_instance(log, x, in, out);
    op.schedule = lane_schedule(op.knobs, out, stages, {m, s});
    return op;
  }
  // Softmax: each exponential once, into a stage the row sum and the output both read
  // (a workspace; reading it back costs less than a second exp per element: 1.3x over
  // [8, 151, 151]).
  te::TensorRef e = te::compute("E", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    return tir::call(Intrinsic::kExp, te::read(in, idx) - te::read(m, g.kept_indices(i)));
  });
  te::TensorRef s = lane_reduce(
      "S", false, g.kept_shape, length, kLanes,
      [&](const te::Indices& kept, const arith::Expr& pos) {
        std::vector<arith::Expr> idx(kept.begin(), kept.end());
        idx[last] = pos;
        return te::read(e, idx);
      },
      &stages);
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    return te::read(e, idx) / te::read(s, g.kept_indices(i));
  });
  OpInstance op = softmax_instance(log, x, in, out);
  op.schedule = lane_schedule(op.knobs, out, stages, {m, s}, {}, {e});
  return op;
}

OpInstance softmax_like(bool log, const TensorType& x, int64_t axis) {
  if (!vm::is_floating(x.dtype)) user_error("softmax needs a floating-point input");
  const std::vector<size_t> axes = normalize_axes({axis}, x.shape.size());
  if (axes.size() == 1 && axes[0] + 1 == x.shape.size()) return softmax_last_axis(log, x);
  RowGeometry g = row_geometry(x, axes);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef m = te::compute("M", g.kept_shape, [&](const te::Indices& i) {
    std::vector<te::IterVar> r = g.axes(x);
    return te::max_reduce(te::read(in, g.input_indices(i, r)), r);
  });
  te::TensorRef s = te::compute("S", g.kept_shape, [&](const te::Indices& i) {
    std::vector<te::IterVar> r = g.axes(x);
    Expr shifted = te::read(in, g.input_indices(i, r)) - te::read(m, g.kept_indices(i));
    return te::sum(tir::call(Intrinsic::kExp, shifted), r);
  });
  te::TensorRef out = softmax_output(log, x, in, g, m, s);
  OpInstance op = softmax_instance(log, x, in, out);
  op.schedule = g.reduced.back() ? norm_schedule(op.knobs, out, {m, s})
                                 : across_schedule(op.knobs, out, {m, s}, g.reduced);
  return op;
}

}  // namespace

OpInstance softmax(const TensorType& x, int64_t axis) { return softmax_like(false, x, axis); }

OpInstance log_softmax(const TensorType& x, int64_t axis) { return softmax_like(true, x, axis); }

OpInstance layer_norm(const TensorType& x, const TensorType& scale,
                      const std::optional<TensorType>& bias, int64_t axis, double epsilon,
                      size_t num_outputs) {
  if (!vm::is_floating(x.dtype)) user_error("layer_norm needs a floating-point input");
  if (num_outputs < 1 || num_outputs > 3) {
    user_error("layer_norm has 1 to 3 outputs (Y, Mean, InvStdDev), not ", num_outputs);
  }
  if (scale.dtype != x.dtype || (bias && bias->dtype != x.dtype)) {
    user_error("layer_norm: scale and bias must have the input's dtype");
  }
  auto rank = static_cast<int64_t>(x.shape.size());
  if (axis < -rank || axis >= rank) user_error("layer_norm: axis ", axis, " is out of range");
  if (axis < 0) axis += rank;
  std::vector<size_t> axes;
  for (auto d = static_cast<size_t>(axis); d < x.shape.size(); ++d) axes.push_back(d);
  RowGeometry g = row_geometry(x, axes);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef sc = te::placeholder("Scale", scale.shape, scale.dtype);
  te::TensorRef bi = bias ? te::placeholder("Bias", bias->shape, bias->dtype) : nullptr;
  if (broadcast_shape({x.shape, scale.shape}).size() != x.shape.size()) {
    user_error("layer_norm: scale has a higher rank than the input");
  }
  arith::Expr count = g.count;
  // Over the last axis alone (the usual layer norm of a feature vector) the two sums
  // reduce in vector lanes (lane_reduce), else with the scalar reduction template.
  const bool by_lanes = axes.size() == 1 && axes[0] + 1 == x.shape.size();
  LaneStages stages;
  auto at = [&](const te::Indices& kept, const arith::Expr& pos) {
    std::vector<arith::Expr> idx(kept.begin(), kept.end());
    idx.back() = pos;
    return te::read(in, idx);
  };
  te::TensorRef sum;
  if (by_lanes) {
    sum = lane_reduce("Sum", false, g.kept_shape, count, kLanes, at, &stages);
  } else {
    sum = te::compute("Sum", g.kept_shape, [&](const te::Indices& i) {
      std::vector<te::IterVar> r = g.axes(x);
      return te::sum(te::read(in, g.input_indices(i, r)), r);
    });
  }
  auto mean_at = [&](const te::Indices& i) {
    Expr s = te::read(sum, g.kept_indices(i));
    return s / tir::cast(s.type(), tir::index_value(count));
  };
  te::TensorRef sq;
  if (by_lanes) {
    sq = lane_reduce(
        "SqSum", false, g.kept_shape, count, kLanes,
        [&](const te::Indices& kept, const arith::Expr& pos) {
          Expr d = at(kept, pos) - mean_at(kept);
          return d * d;
        },
        &stages);
  } else {
    sq = te::compute("SqSum", g.kept_shape, [&](const te::Indices& i) {
      std::vector<te::IterVar> r = g.axes(x);
      Expr d = te::read(in, g.input_indices(i, r)) - mean_at(i);
      return te::sum(d * d, r);
    });
  }
  auto inv_std_dev_at = [&](const te::Indices& i) {
    Expr v = te::read(sq, g.kept_indices(i));
    Expr var = v / tir::cast(v.type(), tir::index_value(count));
    return tir::call(Intrinsic::kRsqrt, var + tir::make_const(v.type(), epsilon));
  };
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    Expr y = (te::read(in, idx) - mean_at(i)) * inv_std_dev_at(i);
    y = y * te::read(sc, broadcast_indices(scale.shape, i));
    if (bi) y = y + te::read(bi, broadcast_indices(bias->shape, i));
    return y;
  });
  // The statistics outputs, one per row over the kept shape.
  std::vector<te::TensorRef> stats;
  if (num_outputs >= 2) {
    stats.push_back(te::compute("Mean", g.kept_shape, [&](const te::Indices& i) {
      return tir::cast(tir::f32(), mean_at(i));
    }));
  }
  if (num_outputs >= 3) {
    stats.push_back(te::compute("InvStdDev", g.kept_shape, [&](const te::Indices& i) {
      return tir::cast(tir::f32(), inv_std_dev_at(i));
    }));
  }
  OpInstance op;
  op.name = "layer_norm_" + dtype_suffix(x.dtype);
  op.inputs = {in, sc};
  if (bi) op.inputs.push_back(bi);
  op.outputs = {out};
  op.outputs.insert(op.outputs.end(), stats.begin(), stats.end());
  op.knobs = norm_knobs(x.shape);
  op.schedule = by_lanes ? lane_schedule(op.knobs, out, stages, {sum, sq}, stats)
                         : norm_schedule(op.knobs, out, {sum, sq}, stats);
  op.preferred_multiples = last_dim_multiple(x.shape, 8);
  return op;
}

OpInstance hardmax(const TensorType& x, int64_t axis) {
  if (!vm::is_floating(x.dtype)) user_error("hardmax needs a floating-point input");
  const std::vector<size_t> axes = normalize_axes({axis}, x.shape.size());
  const size_t a = axes[0];
  RowGeometry g = row_geometry(x, axes);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef first = te::compute("A", g.kept_shape, [&](const te::Indices& i) {
    std::vector<te::IterVar> r = g.axes(x);
    return te::argmax(te::read(in, g.input_indices(i, r)), r);
  });
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    Expr hit = tir::compare(tir::CompareOp::kEq, tir::index_value(i[a]),
                            te::read(first, g.kept_indices(i)));
    tir::DataType t{x.dtype, 1};
    return tir::select(hit, tir::make_const(t, 1), tir::make_const(t, 0));
  });
  OpInstance op;
  op.name = "hardmax_" + dtype_suffix(x.dtype);
  op.inputs = {in};
  op.outputs = {out};
  op.knobs = norm_knobs(x.shape);
  op.schedule = norm_schedule(op.knobs, out, {first});
  return op;
}

OpInstance lrn(const TensorType& x, int64_t size, double alpha, double beta, double bias) {
  if (!vm::is_floating(x.dtype)) user_error("lrn needs a floating-point input");
  if (x.shape.size() < 3) user_error("lrn needs an input of rank >= 3 (N x C x ...)");
  if (size < 1) user_error("lrn: size must be positive, got ", size);
  const arith::Expr channels = x.shape[1];
  const int64_t before = (size - 1) / 2;
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  // The sum of squares over the channel window; reads outside [0, C) are clamped into it
  // and selected away (select is eager).
  te::TensorRef sq = te::compute("S", x.shape, [&](const te::Indices& i) {
    te::IterVar r = te::reduce_axis(arith::make_int(size), "rc");
    arith::Expr ch = arith::Expr(i[1]) + arith::Expr(r.var) - arith::make_int(before);
    arith::Expr inside = arith::logical_and(arith::ge(ch, 0), arith::lt(ch, channels));
    std::vector<arith::Expr> idx(i.begin(), i.end());
    idx[1] = arith::max(arith::min(ch, channels - arith::Expr(1)), arith::Expr(0));
    Expr v = te::read(in, idx);
    Expr zero = tir::make_const(v.type(), 0);
    return te::sum(tir::select(tir::index_value(inside, tir::boolean()), v * v, zero), {r});
  });
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    Expr v = te::read(in, idx);
    tir::DataType t = v.type();
    Expr base = tir::make_const(t, bias) +
                tir::make_const(t, alpha / static_cast<double>(size)) * te::read(sq, idx);
    return v / tir::binary(tir::BinaryOp::kPow, base, tir::make_const(t, beta));
  });
  OpInstance op;
  op.name = "lrn_" + dtype_suffix(x.dtype);
  op.inputs = {in};
  op.outputs = {out};
  op.knobs = norm_knobs(x.shape);
  op.schedule = norm_schedule(op.knobs, out, {sq});
  return op;
}

}  // namespace dynvm::ops
