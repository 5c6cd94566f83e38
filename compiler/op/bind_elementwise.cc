// Kernel bindings of the elementwise operators (kernels/ops/elementwise.h): unary math and
// activations with their attributes, Clip (bounds constant or read at run time), binary arithmetic,
// comparison and logic (Mod's fmod picks floor or truncated modulo), two-input Max / Min /
// Sum, Where and Cast; Sin, Cos, HardSwish and PRelu (kernels/ops/activation.h). Acos,
// Asin and Atan have no builder yet.
#include <optional>

#include "compiler/op/bind_families.h"
#include "kernels/ops/activation.h"
#include "kernels/ops/elementwise.h"

namespace dynvm::compiler {
namespace {

using ops::BinaryOp;
using ops::UnaryOp;

void bind_unary(const std::string& name, UnaryOp op) {
  register_binding(name, [name, op](const BindContext& ctx) {
    ops::UnaryParams params;
    std::string parts;
    if (op == UnaryOp::kLeakyRelu) {
      params.alpha = attr_float(ctx.attrs(), "alpha", 0.01, ctx.where());
    } else if (op == UnaryOp::kElu) {
      params.alpha = attr_float(ctx.attrs(), "alpha", 1.0, ctx.where());
    } else if (op == UnaryOp::kSelu) {
      params.alpha = attr_float(ctx.attrs(), "alpha", 1.67326319217681884765625, ctx.where());
      params.gamma = attr_float(ctx.attrs(), "gamma", 1.05070102214813232421875, ctx.where());
    } else if (op == UnaryOp::kThresholdedRelu) {
      params.alpha = attr_float(ctx.attrs(), "alpha", 1.0, ctx.where());
    } else if (op == UnaryOp::kHardSigmoid) {
      params.alpha = attr_float(ctx.attrs(), "alpha", 0.2, ctx.where());
      params.beta = attr_float(ctx.attrs(), "beta", 0.5, ctx.where());
    }
    if (params.alpha) parts += "alpha=" + to_string(AttrValue(*params.alpha)) + ";";
    if (params.beta) parts += "beta=" + to_string(AttrValue(*params.beta)) + ";";
    if (params.gamma) parts += "gamma=" + to_string(AttrValue(*params.gamma)) + ";";
    return kernel_binding(ctx, name, parts, {0},
                          [op, params](const auto& t) { return ops::unary(op, t[0], params); });
  });
}

// Clip: min / max are optional scalar inputs. A constant bound becomes the kernel's
// immediate; one known only at run time is a kernel argument, broadcast to x.
KernelBinding bind_clip(const BindContext& ctx) {
  ops::UnaryParams params;
  std::string parts;
  std::vector<size_t> args{0};
  bool lo_arg = false, hi_arg = false;
  auto bound = [&](size_t i, const char* what, const char* key, std::optional<double>* param,
                   bool* is_arg) {
    if (!ctx.has_input(i)) return;
    if (!ctx.input(i).constant.defined()) {
      const Type& t = ctx.input(i).type;
      if (!t.is_tensor() || t->dims.size() > 1) ctx.fail(what, " must be a scalar");
      args.push_back(i);
      *is_arg = true;
      parts += std::string(key) + "=input;";
      return;
    }
    std::vector<double> v = ctx.const_floats(i, what);
    if (v.size() != 1) ctx.fail(what, " must be a scalar");
    *param = v[0];
    parts += std::string(key) + "=" + to_string(AttrValue(v[0])) + ";";
  };
  bound(1, "Clip min", "min", &params.alpha, &lo_arg);
  bound(2, "Clip max", "max", &params.beta, &hi_arg);
  if (!lo_arg && !hi_arg) {
    return kernel_binding(ctx, "Clip", parts, {0}, [params](const auto& t) {
      return ops::unary(UnaryOp::kClip, t[0], params);
    });
  }
  return kernel_binding(ctx, "Clip", parts, args, [params, lo_arg, hi_arg](const auto& t) {
    return ops::elementwise_map("clip", t, [=](const std::vector<tir::Expr>& v) {
      tir::Expr y = v[0];
      size_t next = 1;
      if (lo_arg) {
        y = tir::max(y, v[next++]);
      } else if (params.alpha) {
        y = tir::max(y, tir::make_const(y.type(), *params.alpha));
      }
      if (hi_arg) {
        y = tir::min(y, v[next++]);
      } else if (params.beta) {
        y = tir::min(y, tir::make_const(y.type(), *params.beta));
      }
      return y;
    });
  });
}

// The value of a one-element constant input that broadcasting cannot grow `x` by (its
// rank is at most x's), else nullopt.
std::optional<double> scalar_constant(const BindContext& ctx, size_t i, size_t x) {
  const ValueFacts& c = ctx.input(i);
  if (!c.constant.defined() || c.constant.numel() != 1 || !ctx.input(x).type.is_tensor() ||
      c.constant.shape().size() > ctx.input(x).type->dims.size()) {
    return std::nullopt;
  }
  return ctx.const_floats(i, "a scalar constant").at(0);
}

void bind_binary(const std::string& name, BinaryOp op) {
  register_binding(name, [name, op](const BindContext& ctx) {
    // Pow by a float constant: the exponent is an immediate of a one-input kernel, so that
    // binary_math can make x^2 a product (decomposed layer norms square every element).
    auto floating = [&](size_t i) {
      return ctx.input(i).type.is_tensor() && vm::is_floating(ctx.input(i).type->dtype);
    };
    const std::optional<double> exponent = op == BinaryOp::kPow && floating(0) && floating(1)
                                               ? scalar_constant(ctx, 1, 0)
                                               : std::nullopt;
    if (exponent) {
      return kernel_binding(
          ctx, name, str_cat("exponent=", *exponent), {0}, [op, e = *exponent](const auto& t) {
            return ops::elementwise_map("pow_const", t, [op, e](const std::vector<tir::Expr>& v) {
              return ops::binary_math(op, v[0], tir::make_const(v[0].type(), e));
            });
          });
    }
    return kernel_binding(ctx, name, "", {0, 1},
                          [op](const auto& t) { return ops::binary(op, t[0], t[1]); });
  });
}

// Max / Min / Sum / Mean: one input is that input (Mean's too); two are a binary op;
// more are one kernel folding the op over all of them, broadcast together (Mean divides
// the sum by their count).
void bind_variadic(const std::string& name, BinaryOp op, bool mean = false) {
  register_binding(name, [name, op, mean](const BindContext& ctx) {
    std::vector<size_t> args = present_inputs(ctx);
    if (args.empty()) ctx.fail(name, " needs at least one input");
    if (args.size() == 1) return view_binding(LoweringKind::kAlias);
    if (args.size() == 2 && !mean) {
      return kernel_binding(ctx, name, "", args,
                            [op](const auto& t) { return ops::binary(op, t[0], t[1]); });
    }
    return kernel_binding(ctx, name, "", args, [name, op, mean](const auto& t) {
      for (const ops::TensorType& x : t) {
        if (x.dtype != t[0].dtype) user_error(name, ": the inputs' dtypes differ");
      }
      if (mean && !vm::is_floating(t[0].dtype)) user_error(name, " needs floating-point inputs");
      return ops::elementwise_map(name, t, [op, mean](const std::vector<tir::Expr>& v) {
        tir::Expr acc = v[0];
        for (size_t k = 1; k < v.size(); ++k) acc = ops::binary_math(op, acc, v[k]);
        if (mean) acc = acc / tir::make_const(acc.type(), static_cast<double>(v.size()));
        return acc;
      });
    });
  });
}

}  // namespace

void register_elementwise_bindings() {
  const std::pair<const char*, UnaryOp> unary_ops[] = {
      {"Abs", UnaryOp::kAbs},
      {"Ceil", UnaryOp::kCeil},
      {"Elu", UnaryOp::kElu},
      {"Erf", UnaryOp::kErf},
      {"Exp", UnaryOp::kExp},
      {"Floor", UnaryOp::kFloor},
      {"HardSigmoid", UnaryOp::kHardSigmoid},
      {"LeakyRelu", UnaryOp::kLeakyRelu},
      {"Log", UnaryOp::kLog},
      {"Neg", UnaryOp::kNeg},
      {"Not", UnaryOp::kNot},
      {"Reciprocal", UnaryOp::kReciprocal},
      {"Relu", UnaryOp::kRelu},
      {"Round", UnaryOp::kRound},
      {"Selu", UnaryOp::kSelu},
      {"Sigmoid", UnaryOp::kSigmoid},
      {"Sign", UnaryOp::kSign},
      {"Softplus", UnaryOp::kSoftplus},
      {"Sqrt", UnaryOp::kSqrt},
      {"Tanh", UnaryOp::kTanh},
      {"Tan", UnaryOp::kTan},
      {"Sinh", UnaryOp::kSinh},
      {"Cosh", UnaryOp::kCosh},
      {"Asinh", UnaryOp::kAsinh},
      {"Acosh", UnaryOp::kAcosh},
      {"Atanh", UnaryOp::kAtanh},
      {"Softsign", UnaryOp::kSoftsign},
      {"ThresholdedRelu", UnaryOp::kThresholdedRelu},
      {"Atan", UnaryOp::kAtan},
      {"Asin", UnaryOp::kAsin},
      {"Acos", UnaryOp::kAcos},
  };
  for (const auto& [name, op] : unary_ops) bind_unary(name, op);
  const std::pair<const char*, ops::ActivationOp> activations[] = {
      {"Sin", ops::ActivationOp::kSin},
      {"Cos", ops::ActivationOp::kCos},
      {"HardSwish", ops::ActivationOp::kHardSwish},
  };
  for (const auto& [name, op] : activations) {
    register_binding(name, [name = std::string(name), op = op](const BindContext& ctx) {
      return kernel_binding(ctx, name, "", {0},
                            [op](const auto& t) { return ops::activation(op, t[0]); });
    });
  }
  register_binding("PRelu", [](const BindContext& ctx) {
    return kernel_binding(ctx, "PRelu", "", {0, 1},
                          [](const auto& t) { return ops::prelu(t[0], t[1]); });
  });
  register_binding("Clip", bind_clip);

  const std::pair<const char*, BinaryOp> binary_ops[] = {
      {"Add", BinaryOp::kAdd},         {"Sub", BinaryOp::kSub},
      {"Mul", BinaryOp::kMul},         {"Div", BinaryOp::kDiv},
      {"Pow", BinaryOp::kPow},         {"Equal", BinaryOp::kEqual},
      {"Less", BinaryOp::kLess},       {"LessOrEqual", BinaryOp::kLessEqual},
      {"Greater", BinaryOp::kGreater}, {"GreaterOrEqual", BinaryOp::kGreaterEqual},
      {"And", BinaryOp::kAnd},         {"Or", BinaryOp::kOr},
      {"Xor", BinaryOp::kXor},
  };
  for (const auto& [name, op] : binary_ops) bind_binary(name, op);
  register_binding("Mod", [](const BindContext& ctx) {
    const bool fmod = attr_int(ctx.attrs(), "fmod", 0, ctx.where()) != 0;
    return kernel_binding(ctx, "Mod", fmod ? "fmod=1" : "fmod=0", {0, 1}, [fmod](const auto& t) {
      return ops::binary(fmod ? BinaryOp::kFMod : BinaryOp::kMod, t[0], t[1]);
    });
  });
  bind_variadic("Max", BinaryOp::kMax);
  bind_variadic("Min", BinaryOp::kMin);
  bind_variadic("Sum", BinaryOp::kAdd);
  bind_variadic("Mean", BinaryOp::kAdd, /*mean=*/true);

  register_binding("Where", [](const BindContext& ctx) {
    return kernel_binding(ctx, "Where", "", {0, 1, 2},
                          [](const auto& t) { return ops::where(t[0], t[1], t[2]); });
  });
  register_binding("Cast", [](const BindContext& ctx) {
    const Type& out = ctx.outputs().at(0);
    if (!out.is_tensor()) ctx.fail("Cast's output is not a tensor");
    const vm::DType to = out->dtype;
    return kernel_binding(ctx, "Cast", "to=" + std::string(vm::dtype_name(to)), {0},
                          [to](const auto& t) { return ops::cast(t[0], to); });
  });
}

}  // namespace dynvm::compiler
