// DFT, STFT and MelWeightMatrix (see signal.h) as direct TE reductions in f64.
#include "kernels/ops/signal.h"

#include <cmath>

#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

tir::Expr f64(tir::Expr e) { return tir::cast(tir::f64(), std::move(e)); }
tir::Expr f64(const arith::Expr& index) { return tir::index_value(index, tir::f64()); }
tir::Expr num(double v) { return tir::make_const(tir::f64(), v); }
tir::Expr flag(const arith::Expr& cond) { return tir::index_value(cond, tir::boolean()); }
bool is_const(const arith::Expr& e, int64_t v) { return e.is_int_imm() && e.int_value() == v; }

void require_scalar(const TensorType& t, const char* op, const char* what) {
  if (!t.shape.empty() && !(t.shape.size() == 1 && is_const(t.shape[0], 1))) {
    user_error(op, ": ", what, " must be a scalar");
  }
  if (t.dtype != vm::DType::kInt32 && t.dtype != vm::DType::kInt64) {
    user_error(op, ": ", what, " must be int32 or int64");
  }
}

std::vector<arith::Expr> scalar_at(const TensorType& t) {
  return t.shape.empty() ? std::vector<arith::Expr>{} : std::vector<arith::Expr>{0};
}

// A scalar input's value (rank 0 or [1]) as an index (i64).
tir::Expr scalar_index_at(const te::TensorRef& t, const TensorType& type) {
  return tir::cast(tir::i64(), te::read(t, scalar_at(type)));
}

// One term of sum_j x[j] e^{-+ i theta}, theta = 2 pi ((k j) mod n) / n, as the real part
// (c == 0) or the imaginary part of the product; `sign` +1 forward, -1 inverse.
tir::Expr rotate(tir::Expr re, tir::Expr im, const arith::Expr& k, const arith::Expr& j,
                 const arith::Expr& n, double sign, const arith::Expr& c) {
  arith::Expr safe_n = arith::max(n, arith::Expr(1));
  tir::Expr theta = num(kTwoPi) * f64(arith::floormod(k * j, safe_n)) / f64(safe_n);
  tir::Expr cos = tir::call(tir::Intrinsic::kCos, theta);
  tir::Expr sin = tir::call(tir::Intrinsic::kSin, theta);
  tir::Expr real = re * cos + num(sign) * im * sin;
  tir::Expr imag = im * cos - num(sign) * re * sin;
  return tir::select(flag(arith::eq(c, 0)), real, imag);
}

// The complex sample of `x` at `at` (its last index replaced): (re, im) in f64.
std::pair<tir::Expr, tir::Expr> sample(const te::TensorRef& x, std::vector<arith::Expr> at,
                                       bool complex) {
  at.back() = 0;
  tir::Expr re = f64(te::read(x, at));
  if (!complex) return {re, num(0)};
  at.back() = 1;
  return {re, f64(te::read(x, at))};
}

// A reduction stage `sum` (f64) cast to `dtype` by an injective stage.
OpInstance reduce_then_cast(std::string name, std::vector<te::TensorRef> inputs,
                            const te::TensorRef& sum, vm::DType dtype) {
  te::TensorRef out = te::compute("Y", sum->shape(), [&](const te::Indices& i) {
    return tir::cast(tir::DataType{dtype, 1}, te::read(sum, {i.begin(), i.end()}));
  });
  OpInstance op;
  op.name = std::move(name);
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.knobs = reduction_knobs(sum->shape());
  op.schedule = [specs = op.knobs, sum, out](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    const bool parallel = knob_value(specs, knobs, "parallel") != 0;
    schedule_reduction(s, sum, parallel, knob_value(specs, knobs, "unroll"));
    schedule_injective(s, out, 1, parallel);
    return s;
  };
  return op;
}

void require_float(const TensorType& x, const char* op) {
  if (x.dtype != vm::DType::kFloat32 && x.dtype != vm::DType::kFloat64) {
    user_error(op, ": the signal must be f32 or f64");
  }
}

bool complex_last_dim(const TensorType& x, const char* op) {
  if (x.shape.size() < 2) user_error(op, ": the signal must have rank >= 2");
  const arith::Expr& last = x.shape.back();
  if (!is_const(last, 1) && !is_const(last, 2)) {
    user_error(op, ": the signal's last dim must be 1 (real) or 2 (complex)");
  }
  return is_const(last, 2);
}

}  // namespace

OpInstance dft(const TensorType& x, const TensorType* dft_length, int64_t axis, bool inverse,
               const std::vector<arith::Expr>& out_shape) {
  require_float(x, "dft");
  const bool complex = complex_last_dim(x, "dft");
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (axis < 0 || axis >= rank - 1) user_error("dft: axis ", axis, " is not a signal axis");
  if (out_shape.size() != x.shape.size()) user_error("dft: the output's rank is not x's");
  const auto a = static_cast<size_t>(axis);
  if (dft_length) require_scalar(*dft_length, "dft", "dft_length");
  te::TensorRef in = te::placeholder("X", x.shape, x.dtype);
  std::vector<te::TensorRef> inputs = {in};
  te::TensorRef length;
  if (dft_length) {
    length = te::placeholder("L", dft_length->shape, dft_length->dtype);
    inputs.push_back(length);
  }
  const double sign = inverse ? -1.0 : 1.0;
  te::TensorRef sum = te::compute("S", out_shape, [&](const te::Indices& o) {
    te::IterVar j = te::reduce_axis(x.shape[a], "j");
    std::vector<arith::Expr> at(o.begin(), o.end());
    at[a] = j.var;
    auto [re, im] = sample(in, at, complex);
    arith::Var n_var("n");
    arith::Expr n = dft_length ? arith::Expr(n_var) : x.shape[a];
    tir::Expr term = rotate(re, im, o[a], j.var, n, sign, o.back());
    if (inverse) term = term / f64(arith::max(n, arith::Expr(1)));
    // Samples past dft_length are dropped (truncation); past n they are zero (padding).
    tir::Expr body = tir::select(flag(arith::lt(j.var, n)), term, num(0));
    if (dft_length) {
      body = tir::let_index(n_var, scalar_index_at(length, *dft_length), body);
    }
    return te::sum(body, {j});
  });
  return reduce_then_cast(std::string(inverse ? "idft_" : "dft_") + dtype_suffix(x.dtype) +
                              (complex ? "_c" : "_r") + (dft_length ? "_len" : ""),
                          inputs, sum, x.dtype);
}

OpInstance stft(const TensorType& signal, const TensorType& frame_step, const TensorType* window,
                const TensorType* frame_length, const std::vector<arith::Expr>& out_shape) {
  require_float(signal, "stft");
  const bool complex = complex_last_dim(signal, "stft");
  if (signal.shape.size() != 3) user_error("stft: the signal must be [batch, length, 1 or 2]");
  if (out_shape.size() != 4) user_error("stft: the output must be [batch, frames, bins, 2]");
  require_scalar(frame_step, "stft", "frame_step");
  if (frame_length) require_scalar(*frame_length, "stft", "frame_length");
  if (window && window->shape.size() != 1) user_error("stft: the window must be 1-D");
  if (!window && !frame_length) user_error("stft: needs a window or a frame_length");
  te::TensorRef in = te::placeholder("X", signal.shape, signal.dtype);
  te::TensorRef step = te::placeholder("T", frame_step.shape, frame_step.dtype);
  std::vector<te::TensorRef> inputs = {in, step};
  te::TensorRef win, length;
  if (window) {
    win = te::placeholder("W", window->shape, window->dtype);
    inputs.push_back(win);
  }
  if (frame_length) {
    length = te::placeholder("F", frame_length->shape, frame_length->dtype);
    inputs.push_back(length);
  }
  const arith::Expr& total = signal.shape[1];
  te::TensorRef sum = te::compute("S", out_shape, [&](const te::Indices& o) {
    // With a window its length is the frame's; else the frame length is only a value.
    te::IterVar j = te::reduce_axis(window ? window->shape[0] : total, "j");
    arith::Var step_var("step"), n_var("n");
    arith::Expr n = window ? window->shape[0] : arith::Expr(n_var);
    arith::Expr pos = arith::Expr(o[1]) * arith::Expr(step_var) + arith::Expr(j.var);
    arith::Expr last = arith::max(total - arith::Expr(1), arith::Expr(0));
    auto [re, im] = sample(in, {o[0], arith::min(pos, last), 0}, complex);
    if (window) {
      tir::Expr w = f64(te::read(win, {arith::Expr(j.var)}));
      re = re * w;
      im = im * w;
    }
    tir::Expr term = rotate(re, im, o[2], j.var, n, 1.0, o[3]);
    arith::Expr inside = arith::logical_and(arith::lt(j.var, n), arith::lt(pos, total));
    tir::Expr body = tir::select(flag(inside), term, num(0));
    if (!window) body = tir::let_index(n_var, scalar_index_at(length, *frame_length), body);
    body = tir::let_index(step_var, scalar_index_at(step, frame_step), body);
    return te::sum(body, {j});
  });
  return reduce_then_cast(std::string("stft_") + dtype_suffix(signal.dtype) +
                              (complex ? "_c" : "_r") + (window ? "_w" : "_n"),
                          inputs, sum, signal.dtype);
}

OpInstance mel_weight_matrix(const std::vector<TensorType>& inputs, vm::DType out_dtype,
                             const std::vector<arith::Expr>& out_shape) {
  if (inputs.size() != 5) user_error("mel_weight_matrix: needs 5 scalar inputs");
  if (out_shape.size() != 2) user_error("mel_weight_matrix: the output must be 2-D");
  if (!vm::is_floating(out_dtype) && !vm::is_integer(out_dtype)) {
    user_error("mel_weight_matrix: the output dtype must be numeric");
  }
  const char* names[] = {"M", "D", "R", "L", "U"};
  std::vector<te::TensorRef> in;
  std::vector<tir::Expr> v;  // the five scalars in f64
  for (size_t k = 0; k < 5; ++k) {
    const TensorType& t = inputs[k];
    if (k < 3) require_scalar(t, "mel_weight_matrix", "num_mel_bins, dft_length, sample_rate");
    if (k >= 3 && !vm::is_floating(t.dtype)) {
      user_error("mel_weight_matrix: the edge frequencies must be floating point");
    }
    in.push_back(te::placeholder(names[k], t.shape, t.dtype));
    v.push_back(f64(te::read(in.back(), scalar_at(t))));
  }
  auto log10 = [](tir::Expr e) {
    return tir::call(tir::Intrinsic::kLog, std::move(e)) / num(std::log(10.0));
  };
  auto mel = [&](tir::Expr hz) { return num(2595) * log10(num(1) + hz / num(700)); };
  const tir::Expr low = mel(v[3]);
  const tir::Expr step = (mel(v[4]) - low) / (v[0] + num(2));
  // Point t of the num_mel_bins + 2 evenly spaced in mel, as a spectrogram bin.
  auto bin = [&](const arith::Expr& t) {
    tir::Expr m = f64(t) * step + low;
    tir::Expr hz =
        num(700) * (tir::call(tir::Intrinsic::kExp, m / num(2595) * num(std::log(10.0))) - num(1));
    return tir::call(tir::Intrinsic::kFloor, (v[1] + num(1)) * hz / v[2]);
  };
  auto lt = [](tir::Expr a, tir::Expr b) { return tir::compare(tir::CompareOp::kLt, a, b); };
  auto le = [](tir::Expr a, tir::Expr b) { return tir::compare(tir::CompareOp::kLe, a, b); };
  auto eq = [](tir::Expr a, tir::Expr b) { return tir::compare(tir::CompareOp::kEq, a, b); };
  te::TensorRef out = te::compute("Y", out_shape, [&](const te::Indices& o) {
    const arith::Expr i = o[1];
    tir::Expr l = bin(i), c = bin(i + arith::Expr(1)), h = bin(i + arith::Expr(2));
    tir::Expr j = f64(arith::Expr(o[0]));
    // The falling edge [c, h) is written last in the definition, so it wins at j == c.
    tir::Expr falling = tir::logical_and(lt(c, h), tir::logical_and(le(c, j), lt(j, h)));
    tir::Expr rising = tir::logical_and(lt(l, c), tir::logical_and(le(l, j), le(j, c)));
    tir::Expr spike = tir::logical_and(eq(l, c), eq(j, c));
    tir::Expr w =
        tir::select(falling, (h - j) / (h - c),
                    tir::select(rising, (j - l) / (c - l), tir::select(spike, num(1), num(0))));
    return tir::cast(tir::DataType{out_dtype, 1}, w);
  });
  return injective_op("mel_weight_matrix_" + dtype_suffix(out_dtype), in, out);
}

}  // namespace dynvm::ops
