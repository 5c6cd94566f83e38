// Operator fusion: a call that can take an epilogue (conv, matmul, gemm, slice, any
// elementwise op) and the elementwise calls after it that read only its result, values
// from before and scalar constants become one primitive function (`fn @fused3_Conv_x9(...)
// primitive`), which lowering compiles into ONE kernel that writes its output once:
// PP-OCR's conv -> mul -> add -> hard-swish -> mul -> add chains, an LSTM cell's matmul ->
// add -> sigmoid, a crop -> add -> relu.
//
// Rules (compiler/passes/README.md):
//   - a follower is an elementwise call (its kernels/ops builder sets
//     OpInstance::elementwise) whose output has the group's shape and which reads values of
//     one group, each of the group's shape; its other operands are earlier values
//     (broadcast into the shape) or constants;
//   - every member but the last is used only inside the group (else the group is cut back);
//   - calls whose value type inference already knows (host shape values) are never fused;
//   - a member's run-time checks (infer_types' RunChecks: a conv's new output dim must not
//     be negative) move to the fused call and are asserted before the group runs.
// Runs after infer_types on the typed module; nested bodies (If branches, Loop bodies) are
// fused too. The fused functions' parameters are the group's non-scalar inputs (constants
// included, so weights stay kernel arguments); scalar constants stay in the body, and
// lowering makes them immediates of the kernel.
#pragma once

#include "compiler/passes/infer_types.h"

namespace dynvm::compiler {

PassResult fuse_ops(const TypedModule& typed);

}  // namespace dynvm::compiler
