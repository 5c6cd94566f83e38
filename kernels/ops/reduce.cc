// Reductions (see reduce.h).
#include "kernels/ops/reduce.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "kernels/arith/simplify.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;

// The reduction's geometry: which input dims are reduced, the output shape, and how to
// turn (output indices, reduce vars) into input indices.
struct ReduceGeometry {
  std::vector<bool> reduced;
  std::vector<arith::Expr> out_shape;
  std::vector<arith::Expr> kept_shape;  // the keepdims shape (for intermediates)
  arith::Expr count = arith::make_int(1);

  // Input indices from output indices (of out_shape when keepdims = `keep`) and reduce axes.
  std::vector<arith::Expr> input_indices(const te::Indices& out, bool keep,
                                         const std::vector<te::IterVar>& raxes) const {
    std::vector<arith::Expr> idx;
    size_t o = 0, r = 0;
    for (size_t d = 0; d < reduced.size(); ++d) {
      if (reduced[d]) {
        idx.push_back(raxes[r++].var);
        if (keep) ++o;
      } else {
        idx.push_back(out[o++]);
      }
    }
    return idx;
  }
  // Indices into the keepdims-shaped intermediate from output indices.
  std::vector<arith::Expr> kept_indices(const te::Indices& out, bool keep) const {
    std::vector<arith::Expr> idx;
    size_t o = 0;
    for (size_t d = 0; d < reduced.size(); ++d) {
      if (reduced[d]) {
        idx.push_back(arith::make_int(0));
        if (keep) ++o;
      } else {
        idx.push_back(out[o++]);
      }
    }
    return idx;
  }
};

ReduceGeometry geometry(const TensorType& x, const std::vector<size_t>& axes, bool keepdims) {
  ReduceGeometry g;
  g.reduced.assign(x.shape.size(), false);
  for (size_t a : axes) g.reduced[a] = true;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (g.reduced[d]) {
      g.count = g.count * x.shape[d];
      g.kept_shape.push_back(arith::make_int(1));
      if (keepdims) g.out_shape.push_back(arith::make_int(1));
    } else {
      g.kept_shape.push_back(x.shape[d]);
      g.out_shape.push_back(x.shape[d]);
    }
  }
  return g;
}

std::vector<te::IterVar> reduce_axes_for(const TensorType& x, const ReduceGeometry& g) {
  std::vector<te::IterVar> axes;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (g.reduced[d]) axes.push_back(te::reduce_axis(x.shape[d], "r" + std::to_string(d)));
  }
  // Nothing to reduce (a scalar): a reduction over one element, which reads it once.
  if (axes.empty()) axes.push_back(te::reduce_axis(arith::make_int(1), "r"));
  return axes;
}

enum class Combine : uint8_t { kSum, kProd, kMax, kMin };

Expr combine(Combine c, Expr v, std::vector<te::IterVar> r) {
  switch (c) {
    case Combine::kSum:
      return te::sum(std::move(v), std::move(r));
    case Combine::kProd:
      return te::prod(std::move(v), std::move(r));
    case Combine::kMax:
      return te::max_reduce(std::move(v), std::move(r));
    case Combine::kMin:
      return te::min_reduce(std::move(v), std::move(r));
  }
  return v;
}

Expr identity(Combine c, tir::DataType t) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (c) {
    case Combine::kSum:
      return tir::make_const(t, 0.0);
    case Combine::kProd:
      return tir::make_const(t, 1.0);
    case Combine::kMax:
      return tir::make_const(t, -inf);
    case Combine::kMin:
      return tir::make_const(t, inf);
  }
  return Expr();
}

// A reduction computed in vector lanes: `lanes` holds one partial result per lane
// ([output..., V]), each lane reducing every V-th element of the trailing reduced dims
// (contiguous, taken as one flat axis) with the other reduced axes; `out` combines the V
// lanes. The scalar template's single serial chain becomes one vector accumulator (a max
// over 64K floats: 73 -> 9 us). Flat, a global average pool over a symbolic 14x14 map
// runs one masked tail per channel instead of one per row (480 channels: 77 -> 14 us).
struct Laned {
  te::TensorRef lanes, out;
};

// The trailing reduced dims (a global pool's h and w): how many, and their product, over
// which lanes run as one contiguous axis (one masked tail per output instead of one per row).
struct TrailingRun {
  size_t dims = 0;
  arith::Expr extent = arith::make_int(1);
};

TrailingRun trailing_run(const TensorType& x, const ReduceGeometry& g) {
  TrailingRun t;
  for (size_t d = x.shape.size(); d-- > 0 && g.reduced[d];) {
    ++t.dims;
    t.extent = t.extent * x.shape[d];
  }
  t.extent = arith::simplify(t.extent);
  return t;
}

// Lanes per vector for a float dtype, or 0 when x's reduction stays scalar: integers, the
// innermost axis kept, or static trailing reduced dims of fewer elements than one vector.
int64_t lane_count(const TensorType& x, const ReduceGeometry& g) {
  int64_t v = x.dtype == vm::DType::kFloat32 ? 16 : x.dtype == vm::DType::kFloat64 ? 8 : 0;
  if (v == 0 || x.shape.empty() || !g.reduced.back()) return 0;
  const arith::Expr d = trailing_run(x, g).extent;
  if (d.is_int_imm() && d.int_value() < v) return 0;
  return v;
}

// Vector lanes for the column template (schedule_column_reduction) when x's innermost dim
// is kept and takes a vector's worth (symbolic, or at least 4 elements), else 0.
int64_t column_lanes(const TensorType& x, const ReduceGeometry& g) {
  if (x.shape.empty() || g.reduced.back()) return 0;
  const arith::Expr& d = x.shape.back();
  if (d.is_int_imm() && d.int_value() < 4) return 0;
  switch (x.dtype) {
    case vm::DType::kFloat32:
    case vm::DType::kInt32:
      return 16;
    case vm::DType::kFloat64:
    case vm::DType::kInt64:
      return 8;
    default:
      return 0;
  }
}

// Schedules `reductions` (intermediate or output reduction stages) with the reduction
// template (the column template with `columns` lanes when that is not 0), `laned` ones with
// their lanes accumulated in vectors at each output, `inlined` stages inline, and `out`
// injective when it is not a reduction.
std::function<te::Schedule(const KnobValues&)> reduce_schedule(
    std::vector<KnobSpec> specs, te::TensorRef out, std::vector<te::TensorRef> reductions,
    std::vector<te::TensorRef> inlined, bool out_is_reduction, std::vector<Laned> laned = {},
    int64_t columns = 0) {
  return [=](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    bool parallel = knob_value(specs, knobs, "parallel") != 0;
    for (const te::TensorRef& t : inlined) s[t].compute_inline();
    int64_t unroll = knob_value(specs, knobs, "unroll");
    for (const te::TensorRef& t : reductions) {
      if (columns > 0) {
        schedule_column_reduction(s, t, parallel, unroll, columns);
      } else {
        schedule_reduction(s, t, parallel, unroll);
      }
    }
    for (const Laned& l : laned) {
      te::Stage& so = s[l.out];
      te::Stage& sl = s[l.lanes];
      if (so.num_axes() == 0) {
        // One output: the lanes at the root, reduce axes outside the vector of lanes.
        std::vector<te::IterVarRef> order;
        for (size_t r = 0; r < sl.num_reduce_axes(); ++r) order.push_back(sl.reduce_axis(r));
        order.push_back(sl.axis(0));
        sl.reorder(order);
        sl.vectorize(sl.axis(0));
        continue;
      }
      te::IterVarRef rows = so.axis(0);
      for (size_t d = 1; d < so.num_axes(); ++d) rows = so.fuse(rows, so.axis(d));
      if (parallel) so.parallel(rows);
      accumulate_at(s, l.lanes, so, rows);
    }
    if (!out_is_reduction) {
      schedule_injective(s, out, knob_value(specs, knobs, "vector_width"), parallel);
    }
    return s;
  };
}

// Both templates' knobs (a reduction stage feeding an elementwise output).
std::vector<KnobSpec> combined_knobs(const std::vector<arith::Expr>& shape) {
  std::vector<KnobSpec> knobs = injective_knobs(shape);
  knobs.push_back(reduction_knobs(shape).back());  // unroll
  return knobs;
}

OpInstance arg_reduce(bool is_max, const TensorType& x, int64_t axis, bool keepdims, bool last) {
  std::vector<size_t> axes = normalize_axes({axis}, x.shape.size());
  ReduceGeometry g = geometry(x, axes, keepdims);
  OpInstance op;
  op.name =
      std::string(is_max ? "argmax_" : "argmin_") + (last ? "last_" : "") + dtype_suffix(x.dtype);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  op.inputs = {in};
  te::TensorRef out = te::compute("Y", g.out_shape, [&](const te::Indices& i) {
    std::vector<te::IterVar> r = reduce_axes_for(x, g);
    Expr v = te::read(in, g.input_indices(i, keepdims, r));
    if (last) return is_max ? te::argmax_last(v, r) : te::argmin_last(v, r);
    return is_max ? te::argmax(v, r) : te::argmin(v, r);
  });
  op.outputs = {out};
  op.knobs = reduction_knobs(g.out_shape);
  op.schedule = reduce_schedule(op.knobs, out, {out}, {}, true);
  return op;
}

}  // namespace

OpInstance reduce_to(ReduceKind kind, const TensorType& x,
                     const std::vector<arith::Expr>& out_shape) {
  if (out_shape.size() != x.shape.size()) {
    user_error(reduce_kind_name(kind), ": an output of rank ", out_shape.size(), " for ",
               x.shape.size());
  }
  if (x.dtype == vm::DType::kBool) user_error(reduce_kind_name(kind), " does not take bool");
  const bool mean = kind == ReduceKind::kMean;
  if (mean && !vm::is_floating(x.dtype)) user_error("reduce_mean needs a floating-point input");
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  std::vector<arith::Expr> extents;
  arith::Expr count = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    extents.push_back(arith::floordiv(x.shape[d], arith::max(out_shape[d], 1)));
    count = count * extents.back();
  }
  te::TensorRef out = te::compute("Y", out_shape, [&](const te::Indices& i) {
    std::vector<te::IterVar> r;
    std::vector<arith::Expr> idx;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      r.push_back(te::reduce_axis(extents[d], "k" + std::to_string(d)));
      idx.push_back(i[d] + r.back().var);
    }
    if (r.empty()) r.push_back(te::reduce_axis(arith::make_int(1), "k"));  // a scalar
    Expr v = te::read(in, idx);
    switch (kind) {
      case ReduceKind::kSum:
      case ReduceKind::kMean:
        return te::sum(v, r);
      case ReduceKind::kMax:
        return te::max_reduce(v, r);
      case ReduceKind::kMin:
        return te::min_reduce(v, r);
      case ReduceKind::kProd:
        return te::prod(v, r);
      case ReduceKind::kL1:
        return te::sum(tir::call(tir::Intrinsic::kAbs, v), r);
      case ReduceKind::kSumSquare:
        return te::sum(v * v, r);
      default:
        user_error(reduce_kind_name(kind), " with axes read at run time is not supported yet");
    }
  });
  OpInstance op;
  op.name = std::string(reduce_kind_name(kind)) + "_rt_" + dtype_suffix(x.dtype);
  op.inputs = {in};
  if (!mean) {
    op.outputs = {out};
    op.knobs = reduction_knobs(out_shape);
    op.schedule = reduce_schedule(op.knobs, out, {out}, {}, true);
    return op;
  }
  te::TensorRef y = te::compute("M", out_shape, [&](const te::Indices& i) {
    Expr v = te::read(out, std::vector<arith::Expr>(i.begin(), i.end()));
    return v / tir::cast(v.type(), tir::index_value(count));
  });
  op.outputs = {y};
  op.knobs = combined_knobs(out_shape);
  op.schedule = reduce_schedule(op.knobs, y, {out}, {}, false);
  return op;
}

const char* reduce_kind_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
      return "reduce_sum";
    case ReduceKind::kMean:
      return "reduce_mean";
    case ReduceKind::kMax:
      return "reduce_max";
    case ReduceKind::kMin:
      return "reduce_min";
    case ReduceKind::kProd:
      return "reduce_prod";
    case ReduceKind::kL1:
      return "reduce_l1";
    case ReduceKind::kL2:
      return "reduce_l2";
    case ReduceKind::kLogSumExp:
      return "reduce_log_sum_exp";
    case ReduceKind::kSumSquare:
      return "reduce_sum_square";
    case ReduceKind::kLogSum:
      return "reduce_log_sum";
  }
  return "?";
}

std::vector<size_t> normalize_axes(std::vector<int64_t> axes, size_t rank) {
  auto r = static_cast<int64_t>(rank);
  std::vector<size_t> out;
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes) {
    if (a < -r || a >= r) user_error("reduction axis ", a, " is out of range for rank ", r);
    out.push_back(static_cast<size_t>(a < 0 ? a + r : a));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

OpInstance reduce(ReduceKind kind, const TensorType& x, std::vector<int64_t> axes, bool keepdims) {
  bool needs_float = kind == ReduceKind::kMean || kind == ReduceKind::kL2 ||
                     kind == ReduceKind::kLogSumExp || kind == ReduceKind::kLogSum;
  if (needs_float && !vm::is_floating(x.dtype)) {
    user_error(reduce_kind_name(kind), " needs a floating-point input");
  }
  if (x.dtype == vm::DType::kBool) user_error(reduce_kind_name(kind), " does not take bool");
  ReduceGeometry g = geometry(x, normalize_axes(std::move(axes), x.shape.size()), keepdims);
  OpInstance op;
  op.name = std::string(reduce_kind_name(kind)) + "_" + dtype_suffix(x.dtype);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  op.inputs = {in};
  auto source = [&](const te::Indices& i, bool keep, const std::vector<te::IterVar>& r) {
    return te::read(in, g.input_indices(i, keep, r));
  };
  std::vector<Laned> laned;
  const int64_t lanes = lane_count(x, g);
  // combine_r pre(x[...]) into `shape` (keepdims when `keep`); pre(value, output indices).
  using Pre = std::function<Expr(Expr, const te::Indices&)>;
  auto reduction = [&](const std::string& name, bool keep, const std::vector<arith::Expr>& shape,
                       Combine c, const Pre& pre) {
    if (lanes == 0) {
      return te::compute(name, shape, [&](const te::Indices& i) {
        std::vector<te::IterVar> r = reduce_axes_for(x, g);
        return combine(c, pre(source(i, keep, r), i), r);
      });
    }
    // lanes[o..., l] = combine over the other reduced axes and j of
    //   (j*V + l < D ? pre(x[..., j*V + l]) : identity), D the trailing reduced dims'
    //   extent, j*V + l their flat (contiguous) index.
    const TrailingRun run = trailing_run(x, g);
    const arith::Expr& d = run.extent;
    std::vector<arith::Expr> lane_shape = shape;
    lane_shape.push_back(arith::make_int(lanes));
    te::TensorRef part = te::compute(name + "_lanes", lane_shape, [&](const te::Indices& il) {
      te::Indices i(il.begin(), il.end() - 1);
      const arith::Var& l = il.back();
      std::vector<te::IterVar> r = reduce_axes_for(x, g);
      te::IterVar j =
          te::reduce_axis(arith::simplify(arith::floordiv(d + (lanes - 1), lanes)), "j");
      for (size_t k = r.size() - run.dims; k < r.size(); ++k) r[k] = j;  // replaced below
      std::vector<arith::Expr> idx = g.input_indices(i, keep, r);
      idx.resize(idx.size() - run.dims);
      r.erase(r.end() - static_cast<long>(run.dims) + 1, r.end());
      arith::Expr col = j.var * lanes + l;
      // The flat index, clamped (select evaluates both sides), split into the run's dims.
      arith::Expr rest = arith::min(col, d - 1);
      std::vector<arith::Expr> run_idx(run.dims);
      for (size_t k = run.dims; k-- > 0;) {
        const arith::Expr& dim = x.shape[x.shape.size() - run.dims + k];
        run_idx[k] = k == 0 ? rest : arith::floormod(rest, dim);
        rest = arith::floordiv(rest, dim);
      }
      idx.insert(idx.end(), run_idx.begin(), run_idx.end());
      Expr v = pre(te::read(in, idx), i);
      return combine(c,
                     tir::select(tir::index_value(arith::lt(col, d), tir::boolean()), v,
                                 identity(c, v.type())),
                     r);
    });
    te::TensorRef whole = te::compute(name, shape, [&](const te::Indices& i) {
      te::IterVar rl = te::reduce_axis(arith::make_int(lanes), "l");
      std::vector<arith::Expr> idx(i.begin(), i.end());
      idx.push_back(rl.var);
      return combine(c, te::read(part, idx), {rl});
    });
    laned.push_back({part, whole});
    return whole;
  };
  auto simple = [&](const std::string& name, bool keep, const std::vector<arith::Expr>& shape,
                    Combine c, std::function<Expr(Expr)> f = nullptr) {
    return reduction(name, keep, shape, c,
                     [f](Expr v, const te::Indices&) { return f ? f(std::move(v)) : v; });
  };
  te::TensorRef out;
  std::vector<te::TensorRef> reductions, inlined;
  bool out_is_reduction = true;
  switch (kind) {
    case ReduceKind::kSum:
      out = simple("Y", keepdims, g.out_shape, Combine::kSum);
      break;
    case ReduceKind::kMax:
      out = simple("Y", keepdims, g.out_shape, Combine::kMax);
      break;
    case ReduceKind::kMin:
      out = simple("Y", keepdims, g.out_shape, Combine::kMin);
      break;
    case ReduceKind::kProd:
      out = simple("Y", keepdims, g.out_shape, Combine::kProd);
      break;
    case ReduceKind::kL1:
      out = simple("Y", keepdims, g.out_shape, Combine::kSum,
                   [](Expr v) { return tir::call(tir::Intrinsic::kAbs, v); });
      break;
    case ReduceKind::kSumSquare:
      out = simple("Y", keepdims, g.out_shape, Combine::kSum, [](Expr v) { return v * v; });
      break;
    case ReduceKind::kMean:
    case ReduceKind::kL2:
    case ReduceKind::kLogSum: {
      // A sum, then one value per output: / count, sqrt or log.
      const bool squares = kind == ReduceKind::kL2;
      te::TensorRef s = simple("S", keepdims, g.out_shape, Combine::kSum,
                               [squares](Expr v) { return squares ? v * v : v; });
      arith::Expr count = g.count;
      out = te::compute("Y", g.out_shape, [&](const te::Indices& i) {
        std::vector<arith::Expr> idx(i.begin(), i.end());
        Expr v = te::read(s, idx);
        if (kind == ReduceKind::kL2) return tir::call(tir::Intrinsic::kSqrt, v);
        if (kind == ReduceKind::kLogSum) return tir::call(tir::Intrinsic::kLog, v);
        return v / tir::cast(v.type(), tir::index_value(count));
      });
      reductions = {s};
      out_is_reduction = false;
      break;
    }
    case ReduceKind::kLogSumExp: {
      // log(sum(exp(x - m))) + m with m the max: no overflow for large inputs.
      te::TensorRef m = simple("M", true, g.kept_shape, Combine::kMax);
      te::TensorRef s =
          reduction("S", true, g.kept_shape, Combine::kSum, [&](Expr v, const te::Indices& i) {
            Expr mv = te::read(m, g.kept_indices(i, true));
            return tir::call(tir::Intrinsic::kExp, v - mv);
          });
      out = te::compute("Y", g.out_shape, [&](const te::Indices& i) {
        std::vector<arith::Expr> idx = g.kept_indices(i, keepdims);
        return tir::call(tir::Intrinsic::kLog, te::read(s, idx)) + te::read(m, idx);
      });
      reductions = {m, s};
      out_is_reduction = false;
      break;
    }
  }
  if (out_is_reduction) reductions = {out};
  if (!laned.empty()) reductions.clear();  // every reduction stage is laned
  op.outputs = {out};
  op.knobs = out_is_reduction ? reduction_knobs(g.out_shape) : combined_knobs(g.out_shape);
  op.schedule = reduce_schedule(op.knobs, out, reductions, inlined, out_is_reduction, laned,
                                column_lanes(x, g));
  return op;
}

OpInstance argmax(const TensorType& x, int64_t axis, bool keepdims, bool select_last_index) {
  return arg_reduce(true, x, axis, keepdims, select_last_index);
}

OpInstance argmin(const TensorType& x, int64_t axis, bool keepdims, bool select_last_index) {
  return arg_reduce(false, x, axis, keepdims, select_last_index);
}

}  // namespace dynvm::ops
