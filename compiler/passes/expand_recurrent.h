// Rewrites each LSTM, GRU and RNN call as ops that have kernels. Without sequence_lens, every
// step of every direction is one generated sequence kernel (dynvm.LstmSequence / GruSequence
// / RnnSequence, kernels/ops/recurrent.h) after one product of x with every direction's W: a
// step of a VM Loop cost more in the VM than in its kernels. Otherwise, a Loop over the
// sequence built from ops that have kernels (Gather, MatMul, Add, Sub, Mul, Slice, Sigmoid,
// Tanh, Unsqueeze, Expand, Concat, the cell kernels): one iteration per time step carrying h
// (and c for LSTM), the per-step h as a scan output.
//
// Supported: layout 0 and 1 (batch first, transposes around the same loop), direction
// forward, reverse or bidirectional (one Loop per direction, outputs concatenated), the
// default activations, optional B / initial_h (/ initial_c), LSTM's peepholes (P), GRU's
// linear_before_reset 0 and 1, sequence_lens with direction forward (a batch element's
// states stay and its Y is 0 past its length). Refused with a UserError naming the node:
// sequence_lens in reverse, clip, other activations and LSTM's input_forget.
// Runs on the untyped IR, before infer_types. The cells: recurrent_{lstm,gru,rnn}.cc.
#pragma once

#include "compiler/passes/pass.h"

namespace dynvm::compiler {

PassResult expand_recurrent(const TypedModule& in);

}  // namespace dynvm::compiler
