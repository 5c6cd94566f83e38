// The op families' registration functions (registry.cc calls each once) and the helpers
// they share.
#pragma once

#include <vector>

#include "compiler/op/registry.h"

namespace dynvm::compiler {

void register_elementwise_ops();        // ops_elementwise.cc: math, logic, compare, activations
void register_shape_ops();              // ops_shape.cc: shapes, indexing, data movement
void register_nn_ops();                 // ops_nn.cc: matmul, conv, pooling, norms, reductions, RNNs
void register_elementwise_extra_ops();  // ops_elementwise_extra.cc: BitShift, IsInf, IsNaN, Shrink
void register_normalization_ops();      // ops_normalization.cc: Hardmax, LRN
void register_quantize_ops();           // ops_quantize.cc: QuantizeLinear, DequantizeLinear
void register_linalg_ops();             // ops_linalg.cc: Einsum, Det
void register_indexing_ops();  // ops_indexing.cc: GatherND, ReverseSequence, DepthToSpace, ...
void register_sequence_ops();  // ops_sequence.cc: sequences and optionals
void register_signal_ops();    // ops_signal.cc: DFT, STFT, MelWeightMatrix, TfIdfVectorizer

// Numpy broadcasting of dims: equal dims stay; a 1 takes the other; two different symbolic
// dims become `select(a == 1, b, a)`, with a run-time check that they are equal or one is
// 1 (ctx.require; the kernels broadcast the same way, ops::broadcast_shape).
std::vector<Dim> broadcast_dims(OpContext& ctx, const std::vector<Dim>& a,
                                const std::vector<Dim>& b);

// Axes read at run time (run-time symbols), normalized into [0, rank), with run-time checks
// that they are in range and distinct (ops_shape.cc).
std::vector<arith::Expr> run_time_axes(OpContext& ctx, const std::vector<Dim>& axes, int64_t rank);
// True when `axis` is one of `axes` (a boolean expression).
arith::Expr is_one_of(const std::vector<arith::Expr>& axes, int64_t axis);

}  // namespace dynvm::compiler
