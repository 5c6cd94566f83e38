// Reductions (see reduce.h).
#include "kernels/ops/reduce.h"

#include <algorithm>
#include <functional>

#include "kernels/ops/schedules.h"
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

// Schedules `reductions` (intermediate or output reduction stages) with the reduction
// template, `inlined` stages inline, and `out` injective when it is not a reduction.
std::function<te::Schedule(const KnobValues&)> reduce_schedule(
    std::vector<KnobSpec> specs, te::TensorRef out, std::vector<te::TensorRef> reductions,
    std::vector<te::TensorRef> inlined, bool out_is_reduction) {
  return [=](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    bool parallel = knob_value(specs, knobs, "parallel") != 0;
    for (const te::TensorRef& t : inlined) s[t].compute_inline();
    int64_t unroll = knob_value(specs, knobs, "unroll");
    for (const te::TensorRef& t : reductions) schedule_reduction(s, t, parallel, unroll);
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
  auto simple = [&](const std::string& name, bool keep, const std::vector<arith::Expr>& shape,
                    const std::function<Expr(Expr, std::vector<te::IterVar>)>& combine) {
    return te::compute(name, shape, [&](const te::Indices& i) {
      std::vector<te::IterVar> r = reduce_axes_for(x, g);
      return combine(source(i, keep, r), r);
    });
  };
  auto sum = [](Expr v, std::vector<te::IterVar> r) { return te::sum(std::move(v), std::move(r)); };
  te::TensorRef out;
  std::vector<te::TensorRef> reductions, inlined;
  bool out_is_reduction = true;
  switch (kind) {
    case ReduceKind::kSum:
      out = simple("Y", keepdims, g.out_shape, sum);
      break;
    case ReduceKind::kMax:
      out = simple("Y", keepdims, g.out_shape,
                   [](Expr v, auto r) { return te::max_reduce(std::move(v), std::move(r)); });
      break;
    case ReduceKind::kMin:
      out = simple("Y", keepdims, g.out_shape,
                   [](Expr v, auto r) { return te::min_reduce(std::move(v), std::move(r)); });
      break;
    case ReduceKind::kProd:
      out = simple("Y", keepdims, g.out_shape,
                   [](Expr v, auto r) { return te::prod(std::move(v), std::move(r)); });
      break;
    case ReduceKind::kL1:
      out = simple("Y", keepdims, g.out_shape, [](Expr v, auto r) {
        return te::sum(tir::call(tir::Intrinsic::kAbs, v), std::move(r));
      });
      break;
    case ReduceKind::kSumSquare:
      out = simple("Y", keepdims, g.out_shape,
                   [](Expr v, auto r) { return te::sum(v * v, std::move(r)); });
      break;
    case ReduceKind::kMean:
    case ReduceKind::kL2:
    case ReduceKind::kLogSum: {
      // A sum, then one value per output: / count, sqrt or log.
      const bool squares = kind == ReduceKind::kL2;
      te::TensorRef s = simple("S", keepdims, g.out_shape, [squares](Expr v, auto r) {
        return te::sum(squares ? v * v : v, std::move(r));
      });
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
      te::TensorRef m = simple("M", true, g.kept_shape, [](Expr v, auto r) {
        return te::max_reduce(std::move(v), std::move(r));
      });
      te::TensorRef s = te::compute("S", g.kept_shape, [&](const te::Indices& i) {
        std::vector<te::IterVar> r = reduce_axes_for(x, g);
        Expr mv = te::read(m, g.kept_indices(i, true));
        return te::sum(tir::call(tir::Intrinsic::kExp, source(i, true, r) - mv), r);
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
  op.outputs = {out};
  op.knobs = out_is_reduction ? reduction_knobs(g.out_shape) : combined_knobs(g.out_shape);
  op.schedule = reduce_schedule(op.knobs, out, reductions, inlined, out_is_reduction);
  return op;
}

OpInstance argmax(const TensorType& x, int64_t axis, bool keepdims, bool select_last_index) {
  return arg_reduce(true, x, axis, keepdims, select_last_index);
}

OpInstance argmin(const TensorType& x, int64_t axis, bool keepdims, bool select_last_index) {
  return arg_reduce(false, x, axis, keepdims, select_last_index);
}

}  // namespace dynvm::ops
