// The table from tir::Intrinsic to the IR that computes it, kept apart from the visitor
// (codegen_expr.cc) so that adding an intrinsic is one row here. Rows use LLVM intrinsics
// where they lower to instructions on every x86-64 (sqrt, fabs, copysign) and dynvm's own
// math library (math_ir.h) where LLVM would call libm.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "kernels/codegen/math_ir.h"
#include "kernels/tir/expr.h"

namespace dynvm::codegen {

// What an intrinsic emitter may use.
struct IntrinsicContext {
  llvm::IRBuilder<>& b;
  MathLibrary& math;
};

// Emits fn(x) where x has the register type of `type` (the operand's tir type).
using IntrinsicEmitter = llvm::Value* (*)(IntrinsicContext& ctx, llvm::Value* x,
                                          tir::DataType type);

struct IntrinsicInfo {
  tir::Intrinsic op;
  IntrinsicEmitter emit;
};

// The row for `op` (every tir::Intrinsic has one).
const IntrinsicInfo& intrinsic_info(tir::Intrinsic op);

}  // namespace dynvm::codegen
