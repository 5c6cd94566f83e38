// Data-movement operators (see transform.h): each output element's input index as arith
// expressions over the output's indices, wrapped in a TE compute and the injective schedule.
#include "kernels/ops/transform.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/arith/analyzer.h"
#include "kernels/arith/printer.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using arith::Expr;

// Slice bounds beyond this are "past the end": no tensor dim comes close, and clamping the
// constants first keeps the symbolic arithmetic on them (start + dim, end - start + step)
// far from int64 overflow.
constexpr int64_t kHugeIndex = int64_t{1} << 48;

bool is_const(const Expr& e, int64_t v) { return e.is_int_imm() && e.int_value() == v; }

void bind_dim_vars(arith::Analyzer& analyzer, const Expr& e) {
  if (e.kind() == arith::ExprKind::kVar) {
    if (!analyzer.range(e->var_id)) analyzer.bind(arith::Var(e), 0, arith::kPosInf);
    return;
  }
  for (int i = 0; i < arith::kind_arity(e.kind()); ++i) bind_dim_vars(analyzer, e.operand(i));
}

// What lowering assumes of every shape variable, so that output dims simplify the same way:
// dims are non-negative.
arith::Analyzer dims_analyzer(const std::vector<std::vector<Expr>>& shapes) {
  arith::Analyzer analyzer;
  for (const auto& shape : shapes) {
    for (const Expr& d : shape) bind_dim_vars(analyzer, d);
  }
  return analyzer;
}

Expr clamp(const Expr& e, const Expr& lo, const Expr& hi) {
  return arith::min(arith::max(e, lo), hi);
}

std::vector<Expr> as_exprs(const te::Indices& i) { return {i.begin(), i.end()}; }

// The input index along one dim of a pad: output index `i` shifted by the begin pad and
// brought into [0, d) by the mode (constant mode clamps, for the eager select).
Expr pad_source(PadMode mode, const Expr& i, int64_t begin, int64_t end, const Expr& d) {
  Expr src = begin == 0 ? i : i - begin;
  if (begin <= 0 && end <= 0) return src;  // only cropping: always inside
  Expr last = d - 1;
  if (mode == PadMode::kReflect) {
    if (begin > 0) src = arith::max(src, -src);             // -k -> k
    if (end > 0) src = arith::min(src, last + last - src);  // last + k -> last - k
    // Static dims were checked to be larger than their pads; a symbolic one may not be, and
    // a single reflection then lands outside: keep the read inside anyway.
    return d.is_int_imm() ? src : clamp(src, 0, last);
  }
  if (begin > 0) src = arith::max(src, 0);
  if (end > 0) src = arith::min(src, last);
  return src;
}

}  // namespace

OpInstance transpose(const TensorType& x, const std::vector<int64_t>& perm) {
  size_t rank = x.shape.size();
  std::vector<size_t> p;
  if (perm.empty()) {
    for (size_t k = 0; k < rank; ++k) p.push_back(rank - 1 - k);
  } else {
    if (perm.size() != rank) {
      user_error("transpose: perm has ", perm.size(), " entries for an input of rank ", rank);
    }
    std::vector<bool> seen(rank, false);
    for (int64_t a : perm) {
      size_t k = normalize_axis("transpose", a, rank);
      if (seen[k]) user_error("transpose: perm is not a permutation (axis ", a, " repeats)");
      seen[k] = true;
      p.push_back(k);
    }
  }
  std::vector<Expr> shape;
  for (size_t k = 0; k < rank; ++k) shape.push_back(x.shape[p[k]]);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<Expr> idx(rank);
    for (size_t k = 0; k < rank; ++k) idx[p[k]] = i[k];
    return te::read(in, idx);
  });
  return injective_op("transpose_" + dtype_suffix(x.dtype), {in}, out);
}

OpInstance concat(const std::vector<TensorType>& xs, int64_t axis) {
  if (xs.empty()) user_error("concat needs at least one input");
  const TensorType& first = xs[0];
  size_t rank = first.shape.size();
  size_t a = normalize_axis("concat", axis, rank);
  std::vector<std::vector<Expr>> shapes;
  for (const TensorType& t : xs) shapes.push_back(t.shape);
  arith::Analyzer analyzer = dims_analyzer(shapes);
  for (size_t k = 1; k < xs.size(); ++k) {
    const TensorType& t = xs[k];
    if (t.dtype != first.dtype) {
      user_error("concat: input ", k, " is ", dtype_suffix(t.dtype), ", input 0 is ",
                 dtype_suffix(first.dtype));
    }
    if (t.shape.size() != rank) {
      user_error("concat: input ", k, " has rank ", t.shape.size(), ", input 0 has rank ", rank);
    }
    for (size_t d = 0; d < rank; ++d) {
      if (d == a || analyzer.provably_equal(t.shape[d], first.shape[d])) continue;
      if (t.shape[d].is_int_imm() && first.shape[d].is_int_imm()) {
        user_error("concat: dim ", d, " of input ", k, " (", arith::to_string(t.shape[d]),
                   ") does not match input 0's (", arith::to_string(first.shape[d]), ")");
      }
    }
  }
  // Dims off the axis that only the run time can compare (two unrelated symbols) are
  // input 0's in every input: the kernel's argument check fails a call where they differ.
  std::vector<std::vector<Expr>> arg_shapes;
  for (const TensorType& t : xs) {
    arg_shapes.push_back(first.shape);
    arg_shapes.back()[a] = t.shape[a];
  }
  // offsets[k]: where input k starts along the axis.
  std::vector<Expr> offsets = {arith::make_int(0)};
  for (const TensorType& t : xs) {
    offsets.push_back(analyzer.simplify(offsets.back() + t.shape[a]));
  }
  std::vector<Expr> shape = first.shape;
  shape[a] = offsets.back();

  std::vector<te::TensorRef> inputs;
  for (size_t k = 0; k < xs.size(); ++k) {
    inputs.push_back(te::placeholder("X" + std::to_string(k), arg_shapes[k], xs[k].dtype));
  }
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    // The read of input k at its clamped position: in range wherever the select evaluates
    // it, including for the output positions that belong to other inputs.
    auto read_input = [&](size_t k) {
      std::vector<Expr> idx = as_exprs(i);
      Expr pos = is_const(offsets[k], 0) ? Expr(i[a]) : Expr(i[a]) - offsets[k];
      if (k > 0) pos = arith::max(pos, 0);
      if (k + 1 < xs.size()) pos = arith::min(pos, xs[k].shape[a] - 1);
      idx[a] = pos;
      return te::read(inputs[k], idx);
    };
    // Statically empty inputs own no output position: leave them out of the chain (their
    // clamped read would still be out of bounds).
    std::vector<size_t> live;
    for (size_t k = 0; k < xs.size(); ++k) {
      if (!is_const(xs[k].shape[a], 0)) live.push_back(k);
    }
    if (live.empty()) return read_input(xs.size() - 1);  // an empty output: never evaluated
    tir::Expr value = read_input(live.back());
    for (size_t j = live.size() - 1; j-- > 0;) {
      size_t k = live[j];
      tir::Expr inside = tir::index_value(arith::lt(i[a], offsets[k + 1]), tir::boolean());
      value = tir::select(inside, read_input(k), value);
    }
    return value;
  });
  return injective_op("concat_" + dtype_suffix(first.dtype), inputs, out);
}

OpInstance split(const TensorType& x, int64_t axis, const std::vector<Expr>& sizes,
                 bool sizes_checked) {
  size_t rank = x.shape.size();
  size_t a = normalize_axis("split", axis, rank);
  if (sizes.empty()) user_error("split needs at least one output size");
  arith::Analyzer analyzer = dims_analyzer({x.shape, sizes});
  Expr total = arith::make_int(0);
  for (const Expr& s : sizes) {
    if (s.is_int_imm() && s.int_value() < 0) user_error("split: size ", s.int_value(), " < 0");
    total = total + s;
  }
  if (!sizes_checked && !analyzer.provably_equal(total, x.shape[a])) {
    user_error("split: sizes add up to ", arith::to_string(analyzer.simplify(total)),
               ", not the dim ", arith::to_string(x.shape[a]), " of axis ", axis);
  }
  OpInstance op;
  op.name = "split_" + dtype_suffix(x.dtype);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  op.inputs = {in};
  Expr offset = arith::make_int(0);
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<Expr> shape = x.shape;
    shape[a] = analyzer.simplify(sizes[k]);
    op.outputs.push_back(te::compute("Y" + std::to_string(k), shape, [&](const te::Indices& i) {
      std::vector<Expr> idx = as_exprs(i);
      if (!is_const(offset, 0)) idx[a] = i[a] + offset;
      return te::read(in, idx);
    }));
    offset = analyzer.simplify(offset + sizes[k]);
  }
  op.knobs = injective_knobs(x.shape);
  op.schedule = [specs = op.knobs, outs = op.outputs](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule(outs);
    for (const te::TensorRef& out : outs) {
      schedule_injective(s, out, knob_value(specs, knobs, "vector_width"),
                         knob_value(specs, knobs, "parallel") != 0);
    }
    return s;
  };
  op.preferred_multiples = last_dim_multiple(x.shape, 8);
  return op;
}

namespace {

// Slice with constant axes and steps, and starts / ends each a constant or known only at
// run time (nullopt). Without `given` every start and end is a constant and the output's
// dims are computed here; with it they are the given dims, and each entry places its
// window by whichever side is a constant (an unknown start needs a step of 1 or -1).
OpInstance slice_impl(const TensorType& x, const std::vector<std::optional<int64_t>>& starts,
                      const std::vector<std::optional<int64_t>>& ends,
                      const std::vector<int64_t>& axes, const std::vector<int64_t>& steps,
                      const std::vector<Expr>* given, const FusedEpilogue* epilogue) {
  size_t rank = x.shape.size();
  size_t n = starts.size();
  if (ends.size() != n) user_error("slice: ", n, " starts but ", ends.size(), " ends");
  if (!axes.empty() && axes.size() != n)
    user_error("slice: ", n, " starts but ", axes.size(), " axes");
  if (!steps.empty() && steps.size() != n) {
    user_error("slice: ", n, " starts but ", steps.size(), " steps");
  }
  if (given != nullptr && given->size() != rank) {
    user_error("slice: an output of rank ", given->size(), " for ", rank);
  }
  arith::Analyzer analyzer = dims_analyzer({x.shape});
  std::vector<Expr> shape = given != nullptr ? *given : x.shape;
  std::vector<Expr> first(rank, arith::make_int(0));  // the input index of output index 0
  std::vector<int64_t> stride(rank, 1);
  std::vector<bool> sliced(rank, false);
  for (size_t j = 0; j < n; ++j) {
    size_t a = normalize_axis("slice", axes.empty() ? static_cast<int64_t>(j) : axes[j], rank);
    if (sliced[a]) user_error("slice: axis ", a, " is sliced twice");
    sliced[a] = true;
    int64_t step = steps.empty() ? 1 : steps[j];
    if (step == 0) user_error("slice: step 0 on axis ", a);
    step = std::clamp(step, -kHugeIndex, kHugeIndex);  // any larger step takes one element
    const Expr& d = x.shape[a];
    // A position counts from the end of the dim when negative, then clamps into [lo, hi].
    // Only the side a constant's sign can cross is clamped (v >= 0 is above lo, d + v < d
    // is below hi), which keeps symbolic extents readable; a backward start from the end
    // keeps both, the upper last, so that an empty dim gives start = -1 = end: nothing.
    auto position = [&](int64_t v, const Expr& lo, const Expr& hi, bool both) {
      v = std::clamp(v, -kHugeIndex, kHugeIndex);
      if (v >= 0) return arith::min(Expr(v), hi);
      return both ? clamp(d + v, lo, hi) : arith::max(d + v, lo);
    };
    const bool forward = step > 0;
    std::optional<Expr> start, end;
    if (starts[j]) {
      start = forward ? position(*starts[j], 0, d, false) : position(*starts[j], 0, d - 1, true);
    }
    if (ends[j])
      end = forward ? position(*ends[j], 0, d, false) : position(*ends[j], -1, d - 1, false);
    if (given == nullptr) {
      if (!start || !end) user_error("slice: every start and end must be a constant");
      shape[a] = forward ? arith::max(arith::floordiv(*end - *start + (step - 1), step), 0)
                         : arith::max(arith::floordiv(*start - *end + (-step - 1), -step), 0);
    }
    if (!start) {
      // With a step of 1 the window ends where the end is: it starts count before it.
      if (!end || (step != 1 && step != -1)) {
        user_error("slice: an entry with an unknown start needs a constant end and a step of 1");
      }
      start = forward ? *end - shape[a] : *end + shape[a];
    }
    first[a] = analyzer.simplify(*start);
    stride[a] = step;
    shape[a] = analyzer.simplify(shape[a]);
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<Expr> idx = as_exprs(i);
    for (size_t k = 0; k < rank; ++k) {
      if (!sliced[k]) continue;
      Expr pos = stride[k] == 1 ? Expr(i[k]) : i[k] * stride[k];
      idx[k] = is_const(first[k], 0) ? pos : first[k] + pos;
    }
    tir::Expr v = te::read(in, idx);
    return epilogue != nullptr ? epilogue->apply(v, i) : v;
  });
  std::string name = "slice_" + dtype_suffix(x.dtype);
  std::vector<te::TensorRef> inputs{in};
  if (epilogue != nullptr) {
    name += epilogue->name;
    inputs.insert(inputs.end(), epilogue->inputs.begin(), epilogue->inputs.end());
  }
  return injective_op(std::move(name), std::move(inputs), out);
}

std::vector<std::optional<int64_t>> all_known(const std::vector<int64_t>& v) {
  return {v.begin(), v.end()};
}

}  // namespace

OpInstance slice(const TensorType& x, const std::vector<int64_t>& starts,
                 const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& steps) {
  return with_epilogue_builder([=](const FusedEpilogue* e) {
    return slice_impl(x, all_known(starts), all_known(ends), axes, steps, nullptr, e);
  });
}

OpInstance slice_to(const TensorType& x, const std::vector<std::optional<int64_t>>& starts,
                    const std::vector<std::optional<int64_t>>& ends,
                    const std::vector<int64_t>& axes, const std::vector<int64_t>& steps,
                    const std::vector<Expr>& shape) {
  return with_epilogue_builder(
      [=](const FusedEpilogue* e) { return slice_impl(x, starts, ends, axes, steps, &shape, e); });
}

SliceWindow slice_window(const Expr& d, const Expr& start, const Expr& end, const Expr& step) {
  const Expr t = clamp(step, -kHugeIndex, kHugeIndex);
  auto from_end = [&](const Expr& v) {
    Expr c = clamp(v, -kHugeIndex, kHugeIndex);
    return arith::select(arith::lt(c, 0), c + d, c);
  };
  const Expr s = from_end(start), e = from_end(end);
  const Expr forward_first = clamp(s, 0, d);
  const Expr forward_count =
      arith::max(arith::floordiv(clamp(e, 0, d) - forward_first + t - 1, t), 0);
  const Expr backward_first = clamp(s, -1, d - 1);
  const Expr backward_count =
      arith::max(arith::floordiv(backward_first - clamp(e, -1, d - 1) - t - 1, 0 - t), 0);
  const Expr forward = arith::gt(t, 0);
  return {arith::select(forward, forward_first, backward_first),
          arith::select(forward, forward_count, backward_count)};
}

SliceWindow slice_axis(const Expr& d, const std::vector<SliceEntry>& entries, int64_t axis,
                       int64_t rank) {
  Expr start = 0, end = kHugeIndex, step = 1;
  for (const SliceEntry& k : entries) {
    Expr named = arith::eq(arith::select(arith::lt(k.axis, 0), k.axis + rank, k.axis), axis);
    start = arith::select(named, k.start, start);
    end = arith::select(named, k.end, end);
    step = arith::select(named, k.step, step);
  }
  return slice_window(d, start, end, step);
}

OpInstance slice_at_run_time(const TensorType& x, const TensorType& starts, const TensorType& ends,
                             const TensorType* axes, const TensorType* steps,
                             const std::vector<Expr>& shape) {
  const size_t rank = x.shape.size();
  if (shape.size() != rank) user_error("slice: an output of rank ", shape.size(), " for ", rank);
  auto length = [](const TensorType& t, const char* what) -> int64_t {
    if (t.shape.size() != 1 || !t.shape[0].is_int_imm() || !vm::is_integer(t.dtype)) {
      user_error("slice: ", what, " must be an integer vector of a known length");
    }
    return t.shape[0].int_value();
  };
  const int64_t n = length(starts, "starts");
  if (length(ends, "ends") != n || (axes != nullptr && length(*axes, "axes") != n) ||
      (steps != nullptr && length(*steps, "steps") != n)) {
    user_error("slice: starts, ends, axes and steps differ in length");
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  std::vector<te::TensorRef> inputs{in, te::placeholder("starts", starts.shape, starts.dtype),
                                    te::placeholder("ends", ends.shape, ends.dtype)};
  if (axes != nullptr) inputs.push_back(te::placeholder("axes", axes->shape, axes->dtype));
  if (steps != nullptr) inputs.push_back(te::placeholder("steps", steps->shape, steps->dtype));
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    // Each entry's values, read into index variables around the element's read.
    std::vector<std::pair<arith::Var, tir::Expr>> reads;
    std::vector<SliceEntry> entries;
    for (int64_t k = 0; k < n; ++k) {
      auto value = [&](size_t input, const char* name) -> Expr {
        arith::Var v(name + std::to_string(k));
        reads.emplace_back(v, te::read(inputs[input], std::vector<Expr>{k}));
        return v;
      };
      SliceEntry e;
      e.start = value(1, "start");
      e.end = value(2, "end");
      e.axis = axes != nullptr ? value(3, "axis") : Expr(k);
      e.step = steps != nullptr ? value(axes != nullptr ? 4 : 3, "step") : Expr(1);
      entries.push_back(e);
    }
    std::vector<Expr> idx;
    for (size_t a = 0; a < rank; ++a) {
      SliceWindow w =
          slice_axis(x.shape[a], entries, static_cast<int64_t>(a), static_cast<int64_t>(rank));
      Expr step = Expr(1);
      for (const SliceEntry& e : entries) {
        Expr named = arith::eq(
            arith::select(arith::lt(e.axis, 0), e.axis + static_cast<int64_t>(rank), e.axis),
            static_cast<int64_t>(a));
        step = arith::select(named, clamp(e.step, -kHugeIndex, kHugeIndex), step);
      }
      // Kept inside the input even for values the caller's checks let through.
      idx.push_back(clamp(w.first + i[a] * step, 0, x.shape[a] - 1));
    }
    tir::Expr body = te::read(in, idx);
    for (size_t k = reads.size(); k-- > 0;)
      body = tir::let_index(reads[k].first, reads[k].second, body);
    return body;
  });
  return injective_op("slice_rt_" + dtype_suffix(x.dtype), inputs, out);
}

OpInstance pad(const TensorType& x, const std::vector<int64_t>& pads, PadMode mode, double value) {
  size_t rank = x.shape.size();
  if (pads.size() != 2 * rank) {
    user_error("pad: ", pads.size(), " pads for an input of rank ", rank, " (need ", 2 * rank, ")");
  }
  arith::Analyzer analyzer = dims_analyzer({x.shape});
  std::vector<Expr> shape;
  bool empty_input = false;
  for (size_t k = 0; k < rank; ++k) {
    int64_t begin = pads[k], end = pads[k + rank];
    const Expr& d = x.shape[k];
    shape.push_back(analyzer.simplify(d + (begin + end)));
    if (shape.back().is_int_imm() && shape.back().int_value() < 0) {
      user_error("pad: pads ", begin, " and ", end, " crop more than dim ", k, " holds");
    }
    if (!d.is_int_imm()) continue;
    empty_input |= d.int_value() == 0;
    if (mode == PadMode::kReflect && (begin >= d.int_value() || end >= d.int_value())) {
      user_error("pad: reflect pads (", begin, ", ", end, ") must be smaller than dim ", k, " (",
                 d.int_value(), ")");
    }
    if (mode == PadMode::kEdge && d.int_value() == 0 && (begin > 0 || end > 0)) {
      user_error("pad: edge mode cannot pad the empty dim ", k);
    }
  }
  tir::DataType type{x.dtype, 1};
  if (!type.is_float() && !std::isfinite(value)) {
    user_error("pad: the value ", value, " is not representable in ", dtype_suffix(x.dtype));
  }
  tir::Expr fill = tir::make_const(type, type.is_bool() ? static_cast<double>(value != 0) : value);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    // A statically empty input has nothing to read: the output is all padding.
    if (empty_input) return fill;
    std::vector<Expr> idx;
    Expr inside = arith::make_bool(true);
    bool conditional = false;
    for (size_t k = 0; k < rank; ++k) {
      int64_t begin = pads[k], end = pads[k + rank];
      idx.push_back(pad_source(mode, i[k], begin, end, x.shape[k]));
      if (mode != PadMode::kConstant) continue;
      Expr src = begin == 0 ? Expr(i[k]) : i[k] - begin;
      if (begin > 0) inside = arith::logical_and(inside, arith::ge(src, 0));
      if (end > 0) inside = arith::logical_and(inside, arith::lt(src, x.shape[k]));
      conditional |= begin > 0 || end > 0;
    }
    tir::Expr v = te::read(in, idx);
    if (!conditional) return v;
    return tir::select(tir::index_value(inside, tir::boolean()), v, fill);
  });
  static const char* kModeNames[] = {"constant", "reflect", "edge"};
  return injective_op(
      std::string("pad_") + kModeNames[static_cast<int>(mode)] + "_" + dtype_suffix(x.dtype), {in},
      out);
}

OpInstance pad_at_run_time(const TensorType& x, const TensorType& pads, const TensorType* value,
                           PadMode mode, const std::vector<Expr>& shape,
                           const std::vector<std::optional<int64_t>>& known) {
  const size_t rank = x.shape.size();
  if (shape.size() != rank) user_error("pad: an output of rank ", shape.size(), " for ", rank);
  if (pads.shape.size() != 1 || !is_const(pads.shape[0], static_cast<int64_t>(2 * rank)) ||
      !vm::is_integer(pads.dtype)) {
    user_error("pad: pads must be an integer vector of ", 2 * rank, " elements");
  }
  if (!known.empty() && known.size() != 2 * rank) {
    user_error("pad: ", known.size(), " known pads for ", 2 * rank);
  }
  if (value != nullptr && value->dtype != x.dtype) user_error("pad: the value's dtype is not x's");
  auto known_pad = [&](size_t k) { return known.empty() ? std::nullopt : known[k]; };
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  std::vector<te::TensorRef> inputs{in, te::placeholder("pads", pads.shape, pads.dtype)};
  if (value != nullptr) inputs.push_back(te::placeholder("value", value->shape, value->dtype));
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<std::pair<arith::Var, int64_t>> begins;  // read from pads at run time
    std::vector<Expr> idx;
    Expr inside = arith::make_bool(true);
    for (size_t k = 0; k < rank; ++k) {
      const Expr& d = x.shape[k];
      const std::optional<int64_t> begin = known_pad(k), end = known_pad(k + rank);
      if (begin && end) {
        // Both known (a shape computation's zeros): the constant form, no read, and no
        // condition on an axis that is not padded. Nobody checked a reflect pad against a
        // static dim at compile time here: its read is clamped inside x all the same.
        Expr source = pad_source(mode, i[k], *begin, *end, d);
        const bool reflected = mode == PadMode::kReflect && (*begin > 0 || *end > 0);
        idx.push_back(reflected && d.is_int_imm() ? clamp(source, 0, d - 1) : source);
        Expr src = *begin == 0 ? Expr(i[k]) : i[k] - *begin;
        if (*begin > 0) inside = arith::logical_and(inside, arith::ge(src, 0));
        if (*end > 0) inside = arith::logical_and(inside, arith::lt(src, d));
        continue;
      }
      Expr src = i[k];
      if (begin) {
        src = i[k] - *begin;
      } else {
        begins.emplace_back(arith::Var("begin" + std::to_string(k)), static_cast<int64_t>(k));
        src = i[k] - begins.back().first;
      }
      if (mode == PadMode::kReflect) {
        src = arith::max(src, 0 - src);
        src = arith::min(src, (d - 1) + (d - 1) - src);
      }
      inside = arith::logical_and(inside, arith::logical_and(arith::ge(src, 0), arith::lt(src, d)));
      idx.push_back(clamp(src, 0, d - 1));
    }
    tir::Expr v = te::read(in, idx);
    if (mode == PadMode::kConstant) {
      tir::Expr fill = value != nullptr
                           ? te::read(inputs[2], std::vector<Expr>(value->shape.size(), 0))
                           : tir::make_const(tir::DataType{x.dtype, 1}, 0);
      v = tir::select(tir::index_value(inside, tir::boolean()), v, fill);
    }
    for (size_t k = begins.size(); k-- > 0;) {
      v = tir::let_index(begins[k].first, te::read(inputs[1], std::vector<Expr>{begins[k].second}),
                         v);
    }
    return v;
  });
  static const char* kModeNames[] = {"constant", "reflect", "edge"};
  return injective_op(
      std::string("pad_rt_") + kModeNames[static_cast<int>(mode)] + "_" + dtype_suffix(x.dtype),
      inputs, out);
}

OpInstance tile(const TensorType& x, const std::vector<int64_t>& repeats) {
  size_t rank = x.shape.size();
  if (repeats.size() != rank) {
    user_error("tile: ", repeats.size(), " repeats for an input of rank ", rank);
  }
  arith::Analyzer analyzer = dims_analyzer({x.shape});
  std::vector<Expr> shape;
  for (size_t k = 0; k < rank; ++k) {
    if (repeats[k] < 0) user_error("tile: repeats[", k, "] = ", repeats[k], " < 0");
    shape.push_back(analyzer.simplify(x.shape[k] * repeats[k]));
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<Expr> idx;
    for (size_t k = 0; k < rank; ++k) {
      // A statically empty dim gives an empty output: the index is never evaluated.
      bool plain = repeats[k] == 1 || is_const(x.shape[k], 0);
      idx.push_back(plain ? Expr(i[k]) : arith::floormod(i[k], x.shape[k]));
    }
    return te::read(in, idx);
  });
  return injective_op("tile_" + dtype_suffix(x.dtype), {in}, out);
}

OpInstance tile_to(const TensorType& x, const std::vector<Expr>& shape) {
  const size_t rank = x.shape.size();
  if (shape.size() != rank) user_error("tile: an output of rank ", shape.size(), " for ", rank);
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices& i) {
    std::vector<Expr> idx;
    for (size_t k = 0; k < rank; ++k) {
      // An empty input dim gives an empty output (repeats * 0): the index is never read.
      idx.push_back(is_const(x.shape[k], 1) ? Expr(0) : arith::floormod(i[k], x.shape[k]));
    }
    return te::read(in, idx);
  });
  return injective_op("tile_" + dtype_suffix(x.dtype), {in}, out);
}

OpInstance fill(const std::vector<Expr>& shape, const tir::Expr& value) {
  te::TensorRef out = te::compute("Y", shape, [&](const te::Indices&) { return value; });
  return injective_op("fill_" + dtype_suffix(value.type().elem), {}, out);
}

OpInstance range(const TensorType& start, const TensorType& delta, const Expr& n) {
  if (start.dtype != delta.dtype) user_error("range: start and delta differ in dtype");
  if (!start.shape.empty() || !delta.shape.empty()) {
    user_error("range: start and delta must be scalars");
  }
  te::TensorRef s = te::placeholder("S", {}, start.dtype);
  te::TensorRef d = te::placeholder("D", {}, delta.dtype);
  te::TensorRef out = te::compute("Y", {n}, [&](const te::Indices& i) {
    tir::DataType type{start.dtype, 1};
    return tir::binary(tir::BinaryOp::kAdd, te::read(s, std::vector<Expr>{}),
                       tir::binary(tir::BinaryOp::kMul, tir::cast(type, tir::index_value(i[0])),
                                   te::read(d, std::vector<Expr>{})));
  });
  return injective_op("range_" + dtype_suffix(start.dtype), {s, d}, out);
}

OpInstance range_count(const TensorType& start, const TensorType& limit, const TensorType& delta) {
  if (start.dtype != limit.dtype || start.dtype != delta.dtype) {
    user_error("range: start, limit and delta differ in dtype");
  }
  if (!start.shape.empty() || !limit.shape.empty() || !delta.shape.empty()) {
    user_error("range: start, limit and delta must be scalars");
  }
  te::TensorRef s = te::placeholder("S", {}, start.dtype);
  te::TensorRef l = te::placeholder("L", {}, limit.dtype);
  te::TensorRef d = te::placeholder("D", {}, delta.dtype);
  te::TensorRef out = te::compute("N", {}, [&](const te::Indices&) {
    const tir::DataType f64{vm::DType::kFloat64, 1};
    auto read = [&](const te::TensorRef& t) {
      return tir::cast(f64, te::read(t, std::vector<Expr>{}));
    };
    tir::Expr step = read(d);
    tir::Expr zero = tir::make_const(f64, 0);
    tir::Expr span = tir::binary(tir::BinaryOp::kSub, read(l), read(s));
    tir::Expr steps =
        tir::call(tir::Intrinsic::kCeil, tir::binary(tir::BinaryOp::kDiv, span, step));
    tir::Expr n = tir::select(tir::compare(tir::CompareOp::kEq, step, zero), zero,
                              tir::binary(tir::BinaryOp::kMax, steps, zero));
    return tir::cast(tir::DataType{vm::DType::kInt64, 1}, n);
  });
  return injective_op("range_count_" + dtype_suffix(start.dtype), {s, l, d}, out);
}

OpInstance trilu(const TensorType& x, bool upper, int64_t k, const TensorType* k_input) {
  const size_t rank = x.shape.size();
  if (rank < 2) user_error("trilu: the input has rank ", rank, ", needs at least 2");
  if (k_input != nullptr && k_input->dtype != vm::DType::kInt64) {
    user_error("trilu: k must be int64, got ", dtype_suffix(k_input->dtype));
  }
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  std::vector<te::TensorRef> inputs{in};
  if (k_input != nullptr) inputs.push_back(te::placeholder("K", k_input->shape, vm::DType::kInt64));
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    // Column minus row: the diagonal an element is on.
    tir::Expr diagonal = tir::index_value(Expr(i[rank - 1]) - Expr(i[rank - 2]));
    tir::Expr bound = tir::make_const_int(tir::i64(), k);
    if (k_input != nullptr)
      bound = te::read(inputs[1], std::vector<Expr>(k_input->shape.size(), 0));
    tir::Expr keep =
        tir::compare(upper ? tir::CompareOp::kGe : tir::CompareOp::kLe, diagonal, bound);
    tir::Expr value = te::read(in, as_exprs(i));
    return tir::select(keep, value, tir::make_const(value.type(), 0));
  });
  return injective_op(std::string(upper ? "triu_" : "tril_") + dtype_suffix(x.dtype), inputs, out);
}

OpInstance expand_to(const TensorType& x, const std::vector<Expr>& out_shape) {
  if (out_shape.size() < x.shape.size()) user_error("expand: the output has a lower rank");
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", out_shape, [&](const te::Indices& i) {
    return te::read(in, broadcast_indices(x.shape, i, out_shape));
  });
  return injective_op("expand_" + dtype_suffix(x.dtype), {in}, out);
}

OpInstance expand(const TensorType& x, const std::vector<Expr>& shape) {
  for (const Expr& d : shape) {
    if (d.is_int_imm() && d.int_value() < 0) user_error("expand: dim ", d.int_value(), " < 0");
  }
  std::vector<Expr> out_shape = broadcast_shape({x.shape, shape});
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  te::TensorRef out = te::compute("Y", out_shape, [&](const te::Indices& i) {
    return te::read(in, broadcast_indices(x.shape, i, out_shape));
  });
  return injective_op("expand_" + dtype_suffix(x.dtype), {in}, out);
}

}  // namespace dynvm::ops
