// Type relations of the elementwise operators: unary math and activations keep their
// input's type; binary and variadic ops broadcast (numpy rules); comparisons give bool;
// Where broadcasts three; Cast changes the dtype. Integer shape values propagate through
// Add / Sub / Mul / Div, Equal, Where (a decided condition) and Cast (registry.h).
#include <algorithm>
#include <cstdlib>

#include "compiler/op/families.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

void unary(const std::string& name, bool float_only) {
  register_op({name, ShapeRule::kFromInputDims, 1, 1, [float_only](OpContext& ctx) {
                 if (float_only && !vm::is_floating(ctx.dtype(0))) {
                   ctx.fail("needs a floating-point input, got ", vm::dtype_name(ctx.dtype(0)));
                 }
                 return std::vector<ValueFacts>{tensor_facts(ctx.dtype(0), ctx.dims(0))};
               }});
}

// Element k of a value broadcast to `n` elements (a 1-element value repeats).
const Dim& element(const std::vector<Dim>& v, size_t k) { return v.size() == 1 ? v[0] : v[k]; }

std::optional<std::vector<Dim>> combine_values(const OpContext& ctx, const std::string& op) {
  const auto& a = ctx.input(0).value;
  const auto& b = ctx.input(1).value;
  if (!a || !b) return std::nullopt;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return std::nullopt;
  std::vector<Dim> out;
  for (size_t k = 0; k < std::max(a->size(), b->size()); ++k) {
    const Dim& x = element(*a, k);
    const Dim& y = element(*b, k);
    if (op == "Equal") {
      out.push_back(ctx.equal(x, y));
    } else if (op == "Add") {
      out.push_back(ctx.add(x, y));
    } else if (op == "Sub") {
      out.push_back(ctx.sub(x, y));
    } else if (op == "Mul") {
      out.push_back(ctx.mul(x, y));
    } else if (op == "Mod") {
      // Integer Mod: fmod=0 takes the divisor's sign (floor modulo), fmod=1 the dividend's
      // (C's %); the two agree for a size modulo a positive constant, which is what shape
      // code computes (torch's `x.shape[3] % 2` before a pixel unshuffle's pad).
      const bool c_style = ctx.attr_int("fmod", 0) != 0;
      if (y.is_const() && y.value() > 0 && !x.is_any() &&
          (!c_style || ctx.provable(arith::ge(x.expr(), 0)))) {
        out.push_back(ctx.floormod(x, y));
      } else {
        out.push_back(Dim::any());
      }
    } else if (x.is_const() && y.is_const()) {  // Div: C truncation on integers
      if (y.value() == 0) return std::nullopt;
      out.emplace_back(x.value() / y.value());
    } else if (y.is_const() && y.value() > 0 && !x.is_any() &&
               ctx.provable(arith::ge(x.expr(), 0))) {
      out.push_back(ctx.floordiv(x, y));  // a size: floor == truncation
    } else {
      out.push_back(Dim::any());
    }
  }
  return out;
}

// Where over known values, element by element where the condition's is decided: what
// torch's `expand(n, -1, -1)` exports as (Where(Equal(shape, -1), 1, shape)). Without it the
// expanded dims are opaque, and every reshape after them nests selects over them.
std::optional<std::vector<Dim>> where_values(const OpContext& ctx) {
  const auto& c = ctx.input(0).value;
  const auto& a = ctx.input(1).value;
  const auto& b = ctx.input(2).value;
  if (!c || !a || !b) return std::nullopt;
  const size_t n = std::max({c->size(), a->size(), b->size()});
  for (const auto* v : {&*c, &*a, &*b}) {
    if (v->size() != n && v->size() != 1) return std::nullopt;
  }
  std::vector<Dim> out;
  for (size_t k = 0; k < n; ++k) {
    const Dim& cond = element(*c, k);
    if (!cond.is_const()) return std::nullopt;
    out.push_back(cond.value() != 0 ? element(*a, k) : element(*b, k));
  }
  return out;
}

// a (+ - * / ...) b with broadcasting; both operands share a dtype (Pow's exponent and
// PRelu's slope may differ, as ONNX allows).
void binary(const std::string& name, bool same_dtype, bool result_bool, bool propagate) {
  register_op({name, ShapeRule::kFromInputDims, 2, 2, [=](OpContext& ctx) {
                 if (same_dtype && ctx.dtype(0) != ctx.dtype(1)) {
                   ctx.fail("operands have different dtypes (", vm::dtype_name(ctx.dtype(0)),
                            " and ", vm::dtype_name(ctx.dtype(1)), ")");
                 }
                 std::vector<Dim> dims = broadcast_dims(ctx, ctx.dims(0), ctx.dims(1));
                 vm::DType t = result_bool ? vm::DType::kBool : ctx.dtype(0);
                 std::optional<std::vector<Dim>> value;
                 if (propagate) value = combine_values(ctx, name);
                 return std::vector<ValueFacts>{tensor_facts(t, dims, value)};
               }});
}

void variadic(const std::string& name) {
  register_op({name, ShapeRule::kFromInputDims, 1, 64, [](OpContext& ctx) {
                 std::vector<Dim> dims = ctx.dims(0);
                 for (size_t i = 1; i < ctx.num_inputs(); ++i) {
                   if (ctx.dtype(i) != ctx.dtype(0)) ctx.fail("inputs have different dtypes");
                   dims = broadcast_dims(ctx, dims, ctx.dims(i));
                 }
                 return std::vector<ValueFacts>{tensor_facts(ctx.dtype(0), dims)};
               }});
}

}  // namespace

std::vector<Dim> broadcast_dims(OpContext& ctx, const std::vector<Dim>& a,
                                const std::vector<Dim>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank, Dim(1));
  for (size_t k = 0; k < rank; ++k) {
    const Dim* x = k + a.size() >= rank ? &a[k + a.size() - rank] : nullptr;
    const Dim* y = k + b.size() >= rank ? &b[k + b.size() - rank] : nullptr;
    if (x == nullptr || (x->is_const() && x->value() == 1)) {
      out[k] = y != nullptr ? *y : Dim(1);
    } else if (y == nullptr || (y->is_const() && y->value() == 1) || x->same_as(*y)) {
      out[k] = *x;
    } else if (x->is_const() && y->is_const()) {
      ctx.fail("cannot broadcast dims ", x->value(), " and ", y->value());
    } else if (x->is_any() || y->is_any()) {
      out[k] = x->is_any() ? *y : *x;
    } else {
      // Decided at run time (as the kernels do, ops::broadcast_shape): equal, or one is 1.
      const arith::Expr& a = x->expr();
      const arith::Expr& b = y->expr();
      ctx.require(
          arith::logical_or(arith::logical_or(arith::eq(a, b), arith::eq(a, 1)), arith::eq(b, 1)),
          "cannot broadcast dims ", to_string(*x), " and ", to_string(*y),
          " (neither equal nor 1)");
      out[k] = ctx.simplify(arith::select(arith::eq(a, 1), b, a));
    }
  }
  return out;
}

void register_elementwise_ops() {
  for (const char* op : {"Acos",      "Asin",  "Atan",       "Ceil",           "Cos",
                         "Elu",       "Erf",   "Exp",        "Floor",          "HardSigmoid",
                         "HardSwish", "Log",   "Reciprocal", "Round",          "Selu",
                         "Sigmoid",   "Sin",   "Softplus",   "Sqrt",           "Tanh",
                         "LeakyRelu", "Tan",   "Sinh",       "Cosh",           "Asinh",
                         "Acosh",     "Atanh", "Softsign",   "ThresholdedRelu"}) {
    unary(op, true);
  }
  for (const char* op : {"Abs", "Relu", "Sign"}) unary(op, false);
  // Neg keeps integer values (a negated axis list is shape arithmetic, as in LayerNorm's
  // function body).
  register_op({"Neg", ShapeRule::kFromInputDims, 1, 1, [](OpContext& ctx) {
                 std::optional<std::vector<Dim>> value = ctx.input(0).value;
                 if (value) {
                   for (Dim& d : *value) d = ctx.sub(Dim(0), d);
                 }
                 return std::vector<ValueFacts>{tensor_facts(ctx.dtype(0), ctx.dims(0), value)};
               }});
  register_op({"Identity", ShapeRule::kFromInputDims, 1, 1, [](OpContext& ctx) {
                 if (!ctx.input(0).type.is_tensor()) return std::vector<ValueFacts>{ctx.input(0)};
                 return std::vector<ValueFacts>{
                     tensor_facts(ctx.dtype(0), ctx.dims(0), ctx.input(0).value)};
               }});
  register_op({"Not", ShapeRule::kFromInputDims, 1, 1, [](OpContext& ctx) {
                 if (ctx.dtype(0) != vm::DType::kBool) ctx.fail("needs a bool input");
                 std::optional<std::vector<Dim>> value;
                 if (ctx.input(0).value) {
                   value.emplace();
                   for (const Dim& d : *ctx.input(0).value) {
                     value->push_back(d.is_const() ? Dim(1 - d.value()) : Dim::any());
                   }
                 }
                 return std::vector<ValueFacts>{tensor_facts(vm::DType::kBool, ctx.dims(0), value)};
               }});
  // Dropout at inference is the identity (its mask output is not supported).
  register_op({"Dropout", ShapeRule::kFromInputDims, 1, 3, [](OpContext& ctx) {
                 return std::vector<ValueFacts>{tensor_facts(ctx.dtype(0), ctx.dims(0))};
               }});
  register_op({"Cast", ShapeRule::kFromInputDims, 1, 1, [](OpContext& ctx) {
                 int64_t code = ctx.attr_int("to", -1);
                 std::optional<vm::DType> to = vm::from_onnx_code(static_cast<int>(code));
                 if (!to) ctx.fail("unsupported target type ", code);
                 // Integer and bool values survive the cast (to bool: nonzero is 1).
                 std::optional<std::vector<Dim>> value = ctx.input(0).value;
                 if (value && *to == vm::DType::kBool) {
                   for (Dim& d : *value) {
                     d = d.is_const() ? Dim(d.value() != 0 ? 1 : 0) : Dim::any();
                   }
                 }
                 return std::vector<ValueFacts>{tensor_facts(*to, ctx.dims(0), value)};
               }});
  register_op({"Clip", ShapeRule::kFromInputDims, 1, 3, [](OpContext& ctx) {
                 for (size_t i = 1; i < ctx.num_inputs(); ++i) {
                   if (ctx.has_input(i) && ctx.rank(i) != 0) ctx.fail("min / max must be scalars");
                 }
                 return std::vector<ValueFacts>{tensor_facts(ctx.dtype(0), ctx.dims(0))};
               }});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) binary(op, true, false, true);
  binary("Mod", true, false, true);
  binary("Pow", false, false, false);
  binary("PRelu", false, false, false);
  binary("Equal", true, true, true);
  for (const char* op : {"Greater", "GreaterOrEqual", "Less", "LessOrEqual"}) {
    binary(op, true, true, false);
  }
  for (const char* op : {"And", "Or", "Xor"}) binary(op, true, true, false);
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) variadic(op);
  register_op({"Where", ShapeRule::kFromInputDims, 3, 3, [](OpContext& ctx) {
                 if (ctx.dtype(0) != vm::DType::kBool) ctx.fail("the condition must be bool");
                 if (ctx.dtype(1) != ctx.dtype(2)) ctx.fail("the branches have different dtypes");
                 std::vector<Dim> dims = broadcast_dims(ctx, ctx.dims(0), ctx.dims(1));
                 dims = broadcast_dims(ctx, dims, ctx.dims(2));
                 return std::vector<ValueFacts>{
                     tensor_facts(ctx.dtype(1), dims, where_values(ctx))};
               }});
}

}  // namespace dynvm::compiler
