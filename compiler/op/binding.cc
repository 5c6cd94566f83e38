// The binding table and BindContext's constant readers (see binding.h). Like the op
// registry, each family file registers its bindings in a function called once, on the
// table's first use.
#include "compiler/op/binding.h"

#include <algorithm>
#include <map>

#include "compiler/op/bind_families.h"
#include "kernels/arith/simplify.h"
#include "kernels/tir/arith_util.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

std::map<std::string, BindFn>& table() {
  static std::map<std::string, BindFn> bindings;
  return bindings;
}

void ensure_registered() {
  static const bool done = [] {
    register_elementwise_bindings();
    register_shape_bindings();
    register_nn_bindings();
    register_elementwise_extra_bindings();
    register_normalization_bindings();
    register_quantize_bindings();
    register_indexing_bindings();
    register_signal_bindings();
    register_linalg_bindings();
    return true;
  }();
  (void)done;
}

}  // namespace

void register_binding(const std::string& op, BindFn bind) {
  DYNVM_INTERNAL_CHECK(bind != nullptr, "binding of ", op, " is empty");
  bool inserted = table().emplace(op, std::move(bind)).second;
  DYNVM_INTERNAL_CHECK(inserted, "binding of ", op, " registered twice");
}

const BindFn* find_binding(const std::string& op) {
  ensure_registered();
  auto it = table().find(op);
  return it == table().end() ? nullptr : &it->second;
}

ops::TensorType kernel_type(const Type& t, const std::string& where) {
  if (!t.is_tensor()) user_error(where, ": a kernel argument is ", to_string(t));
  ops::TensorType out{t->dtype, {}};
  for (const Dim& d : t->dims) {
    if (d.is_any()) {
      user_error(where, ": a kernel argument has a dim unknown at compile time (", to_string(t),
                 "); lowering needs every dim as an expression of the inputs' dims");
    }
    out.shape.push_back(d.expr());
  }
  return out;
}

std::vector<int64_t> BindContext::const_ints(size_t i, const char* what) const {
  if (!has_input(i)) fail(what, " (input ", i, ") is missing");
  const ValueFacts& f = inputs_[i];
  if (f.constant.defined()) {
    if (vm::is_floating(f.constant.dtype())) fail(what, " must be integers");
    if (f.constant.dtype() == vm::DType::kFloat16 || f.constant.dtype() == vm::DType::kBFloat16 ||
        f.constant.dtype() == vm::DType::kComplex64 ||
        f.constant.dtype() == vm::DType::kComplex128) {
      fail(what, " has the unsupported dtype ", vm::dtype_name(f.constant.dtype()));
    }
    return tensor_elements<int64_t>(f.constant);
  }
  if (f.value) {
    std::vector<int64_t> out;
    for (const Dim& d : *f.value) {
      if (!d.is_const()) fail(what, " must be a compile-time constant, got ", to_string(d));
      out.push_back(d.value());
    }
    return out;
  }
  if (f.type.is_tensor() && std::any_of(f.type->dims.begin(), f.type->dims.end(), [](const Dim& d) {
        return d.is_const() && d.value() == 0;
      })) {
    return {};  // no elements: nothing unknown
  }
  fail(what, " must be a compile-time constant");
}

std::vector<double> BindContext::const_floats(size_t i, const char* what) const {
  if (!has_input(i)) fail(what, " (input ", i, ") is missing");
  const ValueFacts& f = inputs_[i];
  if (f.constant.defined()) {
    const vm::DType t = f.constant.dtype();
    if (t == vm::DType::kFloat16 || t == vm::DType::kBFloat16 || t == vm::DType::kComplex64 ||
        t == vm::DType::kComplex128) {
      fail(what, " has the unsupported dtype ", vm::dtype_name(t));
    }
    return tensor_elements<double>(f.constant);
  }
  if (f.value) {
    std::vector<double> out;
    for (int64_t v : const_ints(i, what)) out.push_back(static_cast<double>(v));
    return out;
  }
  fail(what, " must be a compile-time constant");
}

std::string arg_dtypes(const BindContext& ctx, const std::vector<size_t>& args) {
  std::string out;
  for (size_t i : args) {
    if (!out.empty()) out += ",";
    const Type& t = ctx.input(i).type;
    out += t.is_tensor() ? std::string(vm::dtype_name(t->dtype)) : "?";
  }
  return out;
}

std::string key_int(const BindContext& ctx, const char* name, int64_t fallback) {
  return std::string(name) + "=" +
         std::to_string(attr_int(ctx.attrs(), name, fallback, ctx.where()));
}

std::string key_float(const BindContext& ctx, const char* name, double fallback) {
  return std::string(name) + "=" +
         to_string(AttrValue(attr_float(ctx.attrs(), name, fallback, ctx.where())));
}

std::string key_string(const BindContext& ctx, const char* name, const std::string& fallback) {
  return std::string(name) + "=" + attr_string(ctx.attrs(), name, fallback, ctx.where());
}

std::string key_ints(const std::vector<int64_t>& values) { return to_string(AttrValue(values)); }
std::string key_floats(const std::vector<double>& values) { return to_string(AttrValue(values)); }

KernelBinding kernel_binding(
    const BindContext& ctx, const std::string& op, const std::string& parts,
    std::vector<size_t> args,
    std::function<ops::OpInstance(const std::vector<ops::TensorType>&)> build) {
  KernelBinding b;
  b.kind = LoweringKind::kKernel;
  b.key = op + "|" + parts + "|" + arg_dtypes(ctx, args);
  b.args = std::move(args);
  b.build = std::move(build);
  return b;
}

KernelBinding view_binding(LoweringKind kind) {
  KernelBinding b;
  b.kind = kind;
  return b;
}

std::vector<arith::Expr> output_shape(const BindContext& ctx, size_t k, std::string* key) {
  if (k >= ctx.outputs().size()) ctx.fail("has no output ", k);
  const Type& t = ctx.outputs()[k];
  if (!t.is_tensor()) ctx.fail("output ", k, " is ", to_string(t), ", not a tensor");
  std::vector<arith::Expr> shape;
  *key += "[";
  for (size_t axis = 0; axis < t->dims.size(); ++axis) {
    const Dim& d = t->dims[axis];
    if (d.is_const()) {
      shape.push_back(arith::make_int(d.value()));
      *key += std::to_string(d.value()) + ",";
    } else {
      shape.push_back(arith::Var("o" + std::to_string(axis)));
      *key += "?,";
    }
  }
  *key += "]";
  return shape;
}

std::vector<arith::Expr> in_variant(const std::vector<arith::Expr>& dims,
                                    const std::vector<arith::Expr>& original,
                                    const std::vector<arith::Expr>& variant) {
  tir::VarMap map;
  for (size_t k = 0; k < original.size() && k < variant.size(); ++k) {
    if (original[k].kind() == arith::ExprKind::kVar &&
        !arith::structural_equal(original[k], variant[k])) {
      map[arith::Var(original[k]).id()] = variant[k];
    }
  }
  if (map.empty()) return dims;
  std::vector<arith::Expr> out;
  for (const arith::Expr& d : dims) out.push_back(arith::simplify(tir::substitute(d, map)));
  return out;
}

std::vector<size_t> present_inputs(const BindContext& ctx, size_t first) {
  std::vector<size_t> out;
  for (size_t i = first; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) out.push_back(i);
  }
  return out;
}

}  // namespace dynvm::compiler
