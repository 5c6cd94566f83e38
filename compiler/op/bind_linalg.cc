// Kernel bindings of Einsum (kernels/ops/einsum.h, the equation in the key as written) and
// Det (kernels/ops/det.h).
#include "compiler/op/bind_families.h"
#include "kernels/ops/det.h"
#include "kernels/ops/einsum.h"

namespace dynvm::compiler {

void register_linalg_bindings() {
  register_binding("Einsum", [](const BindContext& ctx) {
    const std::string equation = attr_string(ctx.attrs(), "equation", "", ctx.where());
    return kernel_binding(ctx, "Einsum", "equation=" + equation, present_inputs(ctx),
                          [=](const auto& t) { return ops::einsum(t, equation); });
  });
  register_binding("Det", [](const BindContext& ctx) {
    return kernel_binding(ctx, "Det", "", {0}, [](const auto& t) { return ops::det(t[0]); });
  });
}

}  // namespace dynvm::compiler
