// Kernel bindings of QuantizeLinear and DequantizeLinear (kernels/ops/quantize.h): x, the
// scale and the zero point when present are kernel arguments (read at run time).
#include "compiler/op/bind_families.h"
#include "kernels/ops/quantize.h"

namespace dynvm::compiler {
namespace {

KernelBinding bind_quantize(const BindContext& ctx, bool quantize) {
  const int64_t axis = attr_int(ctx.attrs(), "axis", 1, ctx.where());
  const char* name = quantize ? "QuantizeLinear" : "DequantizeLinear";
  std::vector<size_t> args = present_inputs(ctx);
  if (args.size() < 2 || args[0] != 0 || args[1] != 1) ctx.fail(name, " needs x and a scale");
  return kernel_binding(ctx, name, "axis=" + std::to_string(axis), args, [=](const auto& t) {
    std::optional<ops::TensorType> zero_point;
    if (t.size() > 2) zero_point = t[2];
    return quantize ? ops::quantize_linear(t[0], t[1], zero_point, axis)
                    : ops::dequantize_linear(t[0], t[1], zero_point, axis);
  });
}

}  // namespace

void register_quantize_bindings() {
  register_binding("QuantizeLinear", [](const BindContext& c) { return bind_quantize(c, true); });
  register_binding("DequantizeLinear",
                   [](const BindContext& c) { return bind_quantize(c, false); });
}

}  // namespace dynvm::compiler
