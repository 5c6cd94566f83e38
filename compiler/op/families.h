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
void register_indexing_ops();  // ops_indexing.cc: GatherND, ReverseSequence, DepthToSpace, ...

// Numpy broadcasting of dims: equal dims stay; a 1 takes the other; two different symbolic
// dims keep the first (ONNX requires them equal at run time; shape manifestation checks).
std::vector<Dim> broadcast_dims(OpContext& ctx, const std::vector<Dim>& a,
                                const std::vector<Dim>& b);

}  // namespace dynvm::compiler
