// BatchNormalization at inference folded into the convolution that feeds it, as every
// inference engine does: y = (conv(x, W) + b - mean) * scale / sqrt(var + eps) + B is
// conv(x, W') + b' with, per output channel o,
//   a_o = scale_o / sqrt(var_o + eps),  W'[o] = W[o] * a_o,  b'_o = (b_o - mean_o) * a_o + B_o
// computed at compile time in double precision. One kernel and one pass over the data
// instead of two, and the epilogue fusion that follows (fuse_ops) sees Conv -> Relu.
//
// Folded only when it changes nothing else: the Conv's output is read by this
// BatchNormalization alone, W, the bias and the four statistics are f32 constants, and the
// BatchNormalization has its one inference output. The Conv's binding is left for dce.
//
// Any other inference BatchNormalization with f32 constant statistics (after an activation,
// a pool, a matmul, a Conv read twice) becomes `Add(Mul(x, a), c)`, a_o as above and
// c_o = B_o - mean_o * a_o, both shaped [C, 1, ...] to broadcast over x's trailing dims:
// elementwise calls that fuse_ops folds into the kernel producing x (ConvMixer's
// Conv -> GELU -> BatchNorm is one kernel), where the normalization was a kernel of its own
// with a square root per element.
#pragma once

#include <cstddef>

#include "compiler/passes/pass.h"

namespace dynvm::compiler {

struct FoldBatchNormStats {
  size_t folded = 0;  // into their Conv
  size_t affine = 0;  // as a multiply and an add
};

PassResult fold_batch_norm(const TypedModule& in, FoldBatchNormStats* stats = nullptr);

}  // namespace dynvm::compiler
