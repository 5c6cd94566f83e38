// Softmax, log_softmax, layer_norm (see norm.h). Each is a chain of reduction stages over
// the normalised axes kept as size 1 (so the output reads them by broadcasting) and an
// elementwise output.
#include "kernels/ops/norm.h"

#include "kernels/ops/elementwise.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/schedules.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

using tir::Expr;
using tir::Intrinsic;

std::string dtype_suffix(vm::DType t) { return tir::to_string(tir::DataType{t, 1}); }

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

std::function<te::Schedule(const KnobValues&)> norm_schedule(std::vector<KnobSpec> specs,
                                                             te::TensorRef out,
                                                             std::vector<te::TensorRef> stages) {
  return [=](const KnobValues& knobs) {
    te::Schedule s = te::create_schedule({out});
    bool parallel = knob_value(specs, knobs, "parallel") != 0;
    int64_t unroll = knob_value(specs, knobs, "unroll");
    for (const te::TensorRef& t : stages) schedule_reduction(s, t, parallel, unroll);
    schedule_injective(s, out, knob_value(specs, knobs, "vector_width"), parallel);
    return s;
  };
}

OpInstance softmax_like(bool log, const TensorType& x, int64_t axis) {
  if (!vm::is_floating(x.dtype)) user_error("softmax needs a floating-point input");
  RowGeometry g = row_geometry(x, normalize_axes({axis}, x.shape.size()));
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
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    Expr shifted = te::read(in, idx) - te::read(m, g.kept_indices(i));
    Expr sum = te::read(s, g.kept_indices(i));
    if (log) return shifted - tir::call(Intrinsic::kLog, sum);
    return tir::call(Intrinsic::kExp, shifted) / sum;
  });
  OpInstance op;
  op.name = std::string(log ? "log_softmax_" : "softmax_") + dtype_suffix(x.dtype);
  op.inputs = {in};
  op.outputs = {out};
  op.knobs = norm_knobs(x.shape);
  op.schedule = norm_schedule(op.knobs, out, {m, s});
  op.preferred_multiples = last_dim_multiple(x.shape, 8);
  return op;
}

}  // namespace

OpInstance softmax(const TensorType& x, int64_t axis) { return softmax_like(false, x, axis); }

OpInstance log_softmax(const TensorType& x, int64_t axis) { return softmax_like(true, x, axis); }

OpInstance layer_norm(const TensorType& x, const TensorType& scale,
                      const std::optional<TensorType>& bias, int64_t axis, double epsilon) {
  if (!vm::is_floating(x.dtype)) user_error("layer_norm needs a floating-point input");
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
  te::TensorRef sum = te::compute("Sum", g.kept_shape, [&](const te::Indices& i) {
    std::vector<te::IterVar> r = g.axes(x);
    return te::sum(te::read(in, g.input_indices(i, r)), r);
  });
  auto mean_at = [&](const te::Indices& i) {
    Expr s = te::read(sum, g.kept_indices(i));
    return s / tir::cast(s.type(), tir::index_value(count));
  };
  te::TensorRef sq = te::compute("SqSum", g.kept_shape, [&](const te::Indices& i) {
    std::vector<te::IterVar> r = g.axes(x);
    Expr d = te::read(in, g.input_indices(i, r)) - mean_at(i);
    return te::sum(d * d, r);
  });
  te::TensorRef out = te::compute("Y", x.shape, [&](const te::Indices& i) {
    std::vector<arith::Expr> idx(i.begin(), i.end());
    Expr v = te::read(sq, g.kept_indices(i));
    Expr var = v / tir::cast(v.type(), tir::index_value(count));
    Expr eps = tir::make_const(v.type(), epsilon);
    Expr y = (te::read(in, idx) - mean_at(i)) * tir::call(Intrinsic::kRsqrt, var + eps);
    y = y * te::read(sc, broadcast_indices(scale.shape, i));
    if (bi) y = y + te::read(bi, broadcast_indices(bias->shape, i));
    return y;
  });
  OpInstance op;
  op.name = "layer_norm_" + dtype_suffix(x.dtype);
  op.inputs = {in, sc};
  if (bi) op.inputs.push_back(bi);
  op.outputs = {out};
  op.knobs = norm_knobs(x.shape);
  op.schedule = norm_schedule(op.knobs, out, {sum, sq});
  op.preferred_multiples = last_dim_multiple(x.shape, 8);
  return op;
}

}  // namespace dynvm::ops
