// Pooling builders and their schedule template (see pool.h).
#include "kernels/ops/pool.h"

#include <cmath>
#include <string>

#include "kernels/arith/simplify.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/schedules.h"
#include "kernels/ops/window.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using te::Indices;
using te::TensorRef;

std::string pool_name(const char* base, size_t rank, vm::DType t) {
  return base + std::to_string(rank) + "d_" + tir::to_string(tir::DataType{t, 1});
}

// `integers`: max pool also takes int8 / uint8 (ONNX MaxPool-12).
Window pool_window(const std::string& op, const TensorType& x, const PoolAttrs& attrs,
                   bool integers = false) {
  if (!integers || (x.dtype != vm::DType::kInt8 && x.dtype != vm::DType::kUInt8)) {
    check_float_input(x, op, "X");
  }
  if (x.shape.size() < 3 || x.shape.size() > 5) {
    user_error(op, ": X must be [N, C, spatial...] with 1 to 3 spatial dims, got rank ",
               x.shape.size());
  }
  const size_t rank = x.shape.size() - 2;
  if (attrs.kernel_shape.size() != rank) {
    user_error(op, ": kernel_shape has ", attrs.kernel_shape.size(), " values, want ", rank);
  }
  Window w;
  w.kernel = spatial_values(attrs.kernel_shape, rank, 1, 1, op, "kernel_shape");
  w.strides = spatial_values(attrs.strides, rank, 1, 1, op, "strides");
  w.pads = spatial_values(attrs.pads, 2 * rank, 0, 0, op, "pads");
  w.dilations = spatial_values(attrs.dilations, rank, 1, 1, op, "dilations");
  for (size_t d = 0; d < rank; ++d) {
    // ONNX: a window starting in the end padding would see no input at all.
    if (w.pad_begin(d) >= w.kernel[d] || w.pad_end(d) >= w.kernel[d]) {
      user_error(op, ": pads must be smaller than the kernel");
    }
  }
  return w;
}

// The window of the padded copy: with ceil_mode the last window may reach up to stride - 1
// past the end pad (those reads are the pad value, and outside the average's count).
Window read_window(const Window& w, const PoolAttrs& attrs) {
  Window r = w;
  if (attrs.ceil_mode) {
    for (size_t d = 0; d < w.rank(); ++d) r.pads[w.rank() + d] += w.strides[d] - 1;
  }
  return r;
}

// floordiv (ceil_mode: rounded up) of the span over the stride, plus one; with ceil_mode a
// window starting past the input and its begin pad is dropped (ONNX).
arith::Expr pool_output_dim(const arith::Expr& in, const Window& w, size_t d, bool ceil_mode) {
  if (!ceil_mode) return window_output_dim(in, w, d);
  const int64_t span = w.dilations[d] * (w.kernel[d] - 1) + 1, s = w.strides[d];
  arith::Expr up = arith::floordiv(in + (w.pad_begin(d) + w.pad_end(d) - span + s - 1), s) + 1;
  arith::Expr starts = arith::floordiv(in + (w.pad_begin(d) - 1), s) + 1;
  return arith::simplify(arith::min(up, starts));
}

std::vector<arith::Expr> pool_output_shape(const std::string& op, const TensorType& x,
                                           const Window& w, bool ceil_mode) {
  std::vector<arith::Expr> shape = {x.shape[0], x.shape[1]};
  for (size_t d = 0; d < w.rank(); ++d) {
    shape.push_back(pool_output_dim(x.shape[2 + d], w, d, ceil_mode));
    if (shape.back().is_int_imm() && shape.back().int_value() < 1) {
      user_error(op, ": output dim ", 2 + d, " is ", shape.back().int_value(),
                 " (window larger than input)");
    }
  }
  return shape;
}

// What max pool's pads read: the lowest value of the type.
double lowest(vm::DType t) {
  if (t == vm::DType::kUInt8) return 0;
  if (t == vm::DType::kInt8) return -128;
  return -INFINITY;
}

// The reads of one window: Pad[n, c, o*s + k*d] for the reduce axes `r`.
std::vector<arith::Expr> window_indices(const Indices& i, const std::vector<te::IterVar>& r,
                                        const Window& w) {
  std::vector<arith::Expr> idx = {i[0], i[1]};
  for (size_t d = 0; d < w.rank(); ++d) {
    idx.push_back(i[2 + d] * w.strides[d] + r[d].var * w.dilations[d]);
  }
  return idx;
}

std::vector<te::IterVar> window_axes(const Window& w) {
  std::vector<te::IterVar> r;
  for (size_t d = 0; d < w.rank(); ++d) {
    r.push_back(te::reduce_axis(w.kernel[d], "rk" + std::to_string(d)));
  }
  return r;
}

// The template. `acc`: the reduction `out` reads (average pool's sum), or null to make a
// register accumulator with cache_write.
te::Schedule pool_schedule(const TensorRef& out, TensorRef acc, const TensorRef& pad,
                           const std::vector<KnobSpec>& specs, const KnobValues& knobs) {
  int64_t vector_width = knob_value(specs, knobs, "vector_width");
  bool parallel = knob_value(specs, knobs, "parallel") != 0;
  if (vector_width < 1) user_error("pool: vector_width must be positive, got ", vector_width);
  te::Schedule s = te::create_schedule({out});
  if (!acc) acc = s.cache_write(out, "local");
  if (pad) schedule_injective(s, pad, 1, parallel);
  te::Stage& so = s[out];
  const size_t rank = so.num_axes();
  auto [owo, owi] = so.split(so.axis(rank - 1), vector_width);
  so.vectorize(owi);
  if (parallel) {
    // As in conv's template: fusing loops of symbolic extent leaves the accumulator's
    // region guarded, so a symbolic output runs its channels in parallel, unfused.
    bool is_static = true;
    for (const arith::Expr& d : so.tensor()->shape()) is_static &= d.is_int_imm();
    te::IterVarRef rows = so.axis(is_static ? 0 : 1);
    for (size_t d = 1; is_static && d + 1 < rank; ++d) rows = so.fuse(rows, so.axis(d));
    so.parallel(rows);
  }
  accumulate_at(s, acc, so, owo);
  return s;
}

OpInstance pool_instance(std::string name, TensorRef X, TensorRef Y, TensorRef acc, TensorRef pad,
                         const std::vector<arith::Expr>& out_shape) {
  OpInstance op;
  op.name = std::move(name);
  op.inputs = {X};
  op.outputs = {Y};
  op.knobs = injective_knobs(out_shape);
  if (pad == X) pad = nullptr;
  op.schedule = [Y, acc, pad, specs = op.knobs](const KnobValues& knobs) {
    return pool_schedule(Y, acc, pad, specs, knobs);
  };
  return op;
}

OpInstance global_pool(ReduceKind kind, const char* base, const TensorType& x) {
  check_float_input(x, base, "X");
  if (x.shape.size() < 3) user_error(base, ": X must be [N, C, spatial...]");
  std::vector<int64_t> axes;
  for (size_t d = 2; d < x.shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  OpInstance op = reduce(kind, x, axes, true);
  op.name = pool_name(base, x.shape.size() - 2, x.dtype);
  return op;
}

}  // namespace

OpInstance max_pool(const TensorType& x, const PoolAttrs& attrs) {
  const std::string op = "max_pool";
  Window w = pool_window(op, x, attrs, true);
  if (attrs.count_include_pad) user_error(op, ": count_include_pad is for average pool");
  std::vector<arith::Expr> out_shape = pool_output_shape(op, x, w, attrs.ceil_mode);
  TensorRef X = te::placeholder("X", x.shape, x.dtype);
  TensorRef P = pad_spatial(X, read_window(w, attrs), lowest(x.dtype));
  TensorRef Y = te::compute("Y", out_shape, [&](const Indices& i) {
    std::vector<te::IterVar> r = window_axes(w);
    return te::max_reduce(te::read(P, window_indices(i, r, w)), r);
  });
  return pool_instance(pool_name(op.c_str(), w.rank(), x.dtype), X, Y, nullptr, P, out_shape);
}

OpInstance max_pool_with_indices(const TensorType& x, const PoolAttrs& attrs, bool column_major) {
  const std::string op = "max_pool_with_indices";
  Window w = pool_window(op, x, attrs);
  if (attrs.count_include_pad) user_error(op, ": count_include_pad is for average pool");
  std::vector<arith::Expr> out_shape = pool_output_shape(op, x, w, attrs.ceil_mode);
  const tir::DataType i64{vm::DType::kInt64, 1};
  TensorRef X = te::placeholder("X", x.shape, x.dtype);
  TensorRef P = pad_spatial(X, read_window(w, attrs), -INFINITY);
  // The first maximum's place in its window, row-major over the window's dims.
  TensorRef A = te::compute("Arg", out_shape, [&](const Indices& i) {
    std::vector<te::IterVar> r = window_axes(w);
    return te::argmax(te::read(P, window_indices(i, r, w)), r);
  });
  // Each output element reads its window's maximum (value, or where it is in X).
  auto at_max = [&](const char* name, bool index) {
    return te::compute(name, out_shape, [&](const Indices& i) {
      arith::Var a("a");
      std::vector<arith::Expr> k(w.rank());
      arith::Expr rest = a;
      for (size_t d = w.rank(); d-- > 0;) {
        k[d] = d == 0 ? rest : arith::floormod(rest, w.kernel[d]);
        rest = arith::floordiv(rest, w.kernel[d]);
      }
      std::vector<arith::Expr> in_p = {i[0], i[1]}, in_x = {i[0], i[1]};
      for (size_t d = 0; d < w.rank(); ++d) {
        in_p.push_back(i[2 + d] * w.strides[d] + k[d] * w.dilations[d]);
        in_x.push_back(in_p.back() - w.pad_begin(d));
      }
      // ONNX Indices: flat into X, the spatial dims in reverse order when column-major.
      arith::Expr flat = i[0] * x.shape[1] + i[1];
      for (size_t j = 0; j < w.rank(); ++j) {
        const size_t d = column_major ? w.rank() - 1 - j : j;
        flat = flat * x.shape[2 + d] + in_x[2 + d];
      }
      tir::Expr body = index ? tir::index_value(flat, i64) : te::read(P, in_p);
      return tir::let_index(a, te::read(A, {i.begin(), i.end()}), body);
    });
  };
  TensorRef Y = at_max("Y", false), I = at_max("I", true);
  OpInstance inst;
  inst.name = pool_name("max_pool_indices", w.rank(), x.dtype) + (column_major ? "_cm" : "");
  inst.inputs = {X};
  inst.outputs = {Y, I};
  inst.knobs = reduction_knobs(out_shape);
  inst.schedule = [specs = inst.knobs, P, A, Y, I, X](const KnobValues& knobs) {
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    te::Schedule s = te::create_schedule({Y, I});
    if (P != X) schedule_injective(s, P, 1, parallel);
    schedule_reduction(s, A, parallel);
    schedule_injective(s, Y, 1, parallel);
    schedule_injective(s, I, 1, parallel);
    return s;
  };
  return inst;
}

OpInstance average_pool(const TensorType& x, const PoolAttrs& attrs) {
  const std::string op = "average_pool";
  Window w = pool_window(op, x, attrs);
  for (int64_t d : w.dilations) {
    if (d != 1) user_error(op, ": dilations are not supported");
  }
  std::vector<arith::Expr> out_shape = pool_output_shape(op, x, w, attrs.ceil_mode);
  TensorRef X = te::placeholder("X", x.shape, x.dtype);
  TensorRef P = pad_spatial(X, read_window(w, attrs), 0.0);
  TensorRef S = te::compute("Sum", out_shape, [&](const Indices& i) {
    std::vector<te::IterVar> r = window_axes(w);
    return te::sum(te::read(P, window_indices(i, r, w)), r);
  });
  TensorRef Y = te::compute("Y", out_shape, [&](const Indices& i) {
    // The window [lo, hi) clipped to the input, [max(lo, 0), min(hi, H)), or with
    // count_include_pad to the padded input, [lo, min(hi, H + pad_end)) (only ceil_mode's
    // last window reaches past it).
    arith::Expr count = arith::make_int(1);
    for (size_t d = 0; d < w.rank(); ++d) {
      arith::Expr lo = i[2 + d] * w.strides[d] - w.pad_begin(d);
      arith::Expr hi = lo + w.kernel[d];
      if (attrs.count_include_pad) {
        count = count * (attrs.ceil_mode ? arith::min(hi, x.shape[2 + d] + w.pad_end(d)) - lo
                                         : arith::make_int(w.kernel[d]));
        continue;
      }
      count = count * (arith::min(hi, x.shape[2 + d]) - arith::max(lo, 0));
    }
    std::vector<arith::Expr> idx(i.begin(), i.end());
    tir::Expr sum = te::read(S, idx);
    return sum / tir::index_value(count, sum.type());
  });
  return pool_instance(pool_name(op.c_str(), w.rank(), x.dtype), X, Y, S, P, out_shape);
}

OpInstance global_max_pool(const TensorType& x) {
  return global_pool(ReduceKind::kMax, "global_max_pool", x);
}

OpInstance global_average_pool(const TensorType& x) {
  return global_pool(ReduceKind::kMean, "global_average_pool", x);
}

}  // namespace dynvm::ops
