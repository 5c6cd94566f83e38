// Rewrites each LSTM call as a Loop over the sequence built from ops that have kernels
// (Gather, MatMul, Add, Mul, Slice, Sigmoid, Tanh, Unsqueeze, Expand): one iteration per
// time step carrying (h, c), the per-step h as a scan output. The recurrence is inherently
// sequential, and as a Loop it reuses everything the compiler already does for loops —
// symbolic sequence lengths, specialized kernels for the gate matmuls — instead of a
// monolithic hand-written RNN kernel.
//
// Supported: ONNX LSTM with layout 0, direction forward or reverse, the default
// activations, optional B / initial_h / initial_c; refused with a UserError naming the
// node: bidirectional, peepholes (P), sequence_lens, clip, input_forget, other activations.
// Runs on the untyped IR, before infer_types.
#pragma once

#include "compiler/ir/module.h"

namespace dynvm::compiler {

Module expand_recurrent(const Module& module);

}  // namespace dynvm::compiler
