// Type relations of the elementwise operators beyond ops_elementwise.cc: BitShift
// (unsigned operands, broadcast), IsInf / IsNaN (float in, bool out) and Shrink.
#include "compiler/op/families.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using Facts = std::vector<ValueFacts>;

Facts bit_shift_op(OpContext& ctx) {
  const vm::DType t = ctx.dtype(0);
  if (t != ctx.dtype(1)) ctx.fail("operands have different dtypes");
  if (t != vm::DType::kUInt8 && t != vm::DType::kUInt16 && t != vm::DType::kUInt32 &&
      t != vm::DType::kUInt64) {
    ctx.fail("needs unsigned integer operands, got ", vm::dtype_name(t));
  }
  const std::string direction = ctx.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    ctx.fail("direction must be LEFT or RIGHT, got '", direction, "'");
  }
  return {tensor_facts(t, broadcast_dims(ctx, ctx.dims(0), ctx.dims(1)))};
}

Facts float_predicate_op(OpContext& ctx) {
  if (!vm::is_floating(ctx.dtype(0))) {
    ctx.fail("needs a floating-point input, got ", vm::dtype_name(ctx.dtype(0)));
  }
  return {tensor_facts(vm::DType::kBool, ctx.dims(0))};
}

}  // namespace

void register_elementwise_extra_ops() {
  register_op({"BitShift", ShapeRule::kFromInputDims, 2, 2, bit_shift_op});
  register_op({"IsInf", ShapeRule::kFromInputDims, 1, 1, float_predicate_op});
  register_op({"IsNaN", ShapeRule::kFromInputDims, 1, 1, float_predicate_op});
  register_op({"Shrink", ShapeRule::kFromInputDims, 1, 1, [](OpContext& ctx) {
                 if (ctx.dtype(0) == vm::DType::kBool) ctx.fail("does not take bool");
                 return Facts{tensor_facts(ctx.dtype(0), ctx.dims(0))};
               }});
}

}  // namespace dynvm::compiler
