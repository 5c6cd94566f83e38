// Constant weights pre-packed at compile time into the layout their kernel streams, as
// ONNX Runtime's and oneDNN's prepacking do. A MatMul whose B is an f32 constant [K, N]
// (N >= kPackedPanel) and whose A is an f32 [M, K] or [Batch, M, K] becomes
// `dynvm.MatMulPackedB(A, Bp) {n = N}` with Bp[p, k, c] = B[k, p*16 + c] (zero past N):
// each 16-column panel's K rows lie contiguous, so a register tile reads its panel front to
// back instead of K cache lines a row apart. That is what a weight too large to stay in
// cache between runs needs: PP-OCRv4's [120, 6625] classifier ran 2.1x slower from memory
// than from cache unpacked, 1.1x packed (kernels/ops/matmul.h).
//
// A Gemm with a constant B and A not transposed packs the same way, alpha and transB folded
// into the panels; its C becomes `Add(product, beta * C)` (C constant when beta != 1), which
// fuse_ops then takes as the product's epilogue. torch exports a Linear on 2-D input as
// Gemm(transB = 1): unpacked, its column vectors gathered B's rows K apart (a ViT's
// attention output projection, [197, 96] x [96, 96]^T: 100 -> 33 us).
//
// Only constants are packed, at compile time; a B computed at run time keeps MatMul. The
// MatMul's (the Gemm's) let keeps its variable, so its type and facts carry over.
#pragma once

#include <cstddef>

#include "compiler/passes/pass.h"

namespace dynvm::compiler {

struct PackWeightsStats {
  size_t packed = 0;
};

PassResult pack_weights(const TypedModule& in, PackWeightsStats* stats = nullptr);

}  // namespace dynvm::compiler
