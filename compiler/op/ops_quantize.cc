// Type relations of QuantizeLinear (x's dims, the zero point's dtype or uint8) and
// DequantizeLinear (x's dims, the scale's dtype). Blocked quantization (opset 21's
// block_size) and float8 targets are refused.
#include "compiler/op/families.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

void check_params(const OpContext& ctx) {
  if (ctx.attr_int("block_size", 0) != 0) ctx.fail("blocked quantization is not supported");
  if (ctx.rank(1) > 1) ctx.fail("the scale must be a scalar or 1-D");
  if (ctx.has_input(2) && ctx.rank(2) != ctx.rank(1)) {
    ctx.fail("the zero point and the scale must have the same rank");
  }
  if (ctx.rank(1) == 1) ctx.axis(ctx.attr_int("axis", 1), ctx.rank(0));
}

Facts quantize_op(OpContext& ctx) {
  check_params(ctx);
  vm::DType to = vm::DType::kUInt8;
  if (ctx.has_input(2)) {
    to = ctx.dtype(2);
  } else if (ctx.attr_int("output_dtype", 0) > 2) {  // 2: uint8
    ctx.fail("output_dtype ", ctx.attr_int("output_dtype", 0), " is not supported (uint8 only)");
  }
  if (to != vm::DType::kUInt8 && to != vm::DType::kInt8) {
    ctx.fail("quantizing to ", vm::dtype_name(to), " is not supported (uint8 or int8)");
  }
  return {tensor_facts(to, ctx.dims(0))};
}

Facts dequantize_op(OpContext& ctx) {
  check_params(ctx);
  if (ctx.has_input(2) && ctx.dtype(2) != ctx.dtype(0)) {
    ctx.fail("the zero point's dtype must be x's");
  }
  return {tensor_facts(ctx.dtype(1), ctx.dims(0))};
}

}  // namespace

void register_quantize_ops() {
  register_op({"QuantizeLinear", ShapeRule::kFromInputDims, 2, 3, quantize_op});
  register_op({"DequantizeLinear", ShapeRule::kFromInputDims, 2, 3, dequantize_op});
}

}  // namespace dynvm::compiler
