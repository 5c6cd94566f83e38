// Kernel bindings of BitShift, IsInf, IsNaN and Shrink (kernels/ops/elementwise.h).
#include "compiler/op/bind_families.h"
#include "kernels/ops/elementwise.h"

namespace dynvm::compiler {

void register_elementwise_extra_bindings() {
  register_binding("BitShift", [](const BindContext& ctx) {
    const bool left = attr_string(ctx.attrs(), "direction", "", ctx.where()) == "LEFT";
    return kernel_binding(ctx, "BitShift", left ? "LEFT" : "RIGHT", {0, 1},
                          [left](const auto& t) { return ops::bit_shift(t[0], t[1], left); });
  });
  register_binding("IsInf", [](const BindContext& ctx) {
    const bool negative = attr_int(ctx.attrs(), "detect_negative", 1, ctx.where()) != 0;
    const bool positive = attr_int(ctx.attrs(), "detect_positive", 1, ctx.where()) != 0;
    std::string parts =
        key_int(ctx, "detect_negative", 1) + ";" + key_int(ctx, "detect_positive", 1);
    return kernel_binding(ctx, "IsInf", parts, {0},
                          [=](const auto& t) { return ops::is_inf(t[0], negative, positive); });
  });
  register_binding("IsNaN", [](const BindContext& ctx) {
    return kernel_binding(ctx, "IsNaN", "", {0}, [](const auto& t) { return ops::is_nan(t[0]); });
  });
  register_binding("Shrink", [](const BindContext& ctx) {
    const double lambd = attr_float(ctx.attrs(), "lambd", 0.5, ctx.where());
    const double bias = attr_float(ctx.attrs(), "bias", 0.0, ctx.where());
    std::string parts = key_float(ctx, "lambd", 0.5) + ";" + key_float(ctx, "bias", 0.0);
    return kernel_binding(ctx, "Shrink", parts, {0},
                          [=](const auto& t) { return ops::shrink(t[0], lambd, bias); });
  });
}

}  // namespace dynvm::compiler
