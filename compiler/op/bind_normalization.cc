// Kernel bindings of Hardmax and LRN (kernels/ops/norm.h) and InstanceNormalization
// (kernels/ops/instance_norm.h).
#include "compiler/op/bind_families.h"
#include "kernels/ops/instance_norm.h"
#include "kernels/ops/norm.h"

namespace dynvm::compiler {
namespace {

// Hardmax. Before opset 13 (coerce_to_2d, set by the importer) the input is flattened to 2-D
// at `axis` and the maximum taken over every dim from `axis` on; that equals the one-axis
// kernel only when no dim after `axis` is other than a static 1.
KernelBinding bind_hardmax(const BindContext& ctx) {
  const Type& x = ctx.input(0).type;
  if (!x.is_tensor()) ctx.fail("Hardmax's input is not a tensor");
  const auto rank = static_cast<int64_t>(x->dims.size());
  int64_t axis = attr_int(ctx.attrs(), "axis", -1, ctx.where());
  if (axis < -rank || axis >= rank) ctx.fail("Hardmax axis ", axis, " is out of range");
  if (axis < 0) axis += rank;
  if (attr_int(ctx.attrs(), "coerce_to_2d", 0, ctx.where()) != 0) {
    for (int64_t k = axis + 1; k < rank; ++k) {
      const Dim& d = x->dims[static_cast<size_t>(k)];
      if (!d.is_const() || d.value() != 1) {
        ctx.fail("Hardmax over the flattened dims ", axis, "..", rank - 1,
                 " (opset < 13 semantics) is not yet computable");
      }
    }
  }
  return kernel_binding(ctx, "Hardmax", "axis=" + std::to_string(axis), {0},
                        [axis](const auto& t) { return ops::hardmax(t[0], axis); });
}

KernelBinding bind_lrn(const BindContext& ctx) {
  const int64_t size = attr_int(ctx.attrs(), "size", 0, ctx.where());
  const double alpha = attr_float(ctx.attrs(), "alpha", 1e-4, ctx.where());
  const double beta = attr_float(ctx.attrs(), "beta", 0.75, ctx.where());
  const double bias = attr_float(ctx.attrs(), "bias", 1.0, ctx.where());
  std::string parts = key_int(ctx, "size", 0) + ";" + key_float(ctx, "alpha", 1e-4) + ";" +
                      key_float(ctx, "beta", 0.75) + ";" + key_float(ctx, "bias", 1.0);
  return kernel_binding(ctx, "LRN", parts, {0},
                        [=](const auto& t) { return ops::lrn(t[0], size, alpha, beta, bias); });
}

}  // namespace

void register_normalization_bindings() {
  register_binding("Hardmax", bind_hardmax);
  register_binding("LRN", bind_lrn);
  register_binding("InstanceNormalization", [](const BindContext& ctx) {
    const double epsilon = attr_float(ctx.attrs(), "epsilon", 1e-5, ctx.where());
    return kernel_binding(
        ctx, "InstanceNormalization", key_float(ctx, "epsilon", 1e-5), {0, 1, 2},
        [=](const auto& t) { return ops::instance_norm(t[0], t[1], t[2], epsilon); });
  });
}

}  // namespace dynvm::compiler
