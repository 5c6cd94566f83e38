// Scaled dot-product attention folded into one call, `dynvm.Attention(Q, Kt, V[, mask])
// {scale}` (kernels/ops/attention.h), from the chain every exporter writes for it:
//
//   S = MatMul(Q, Kt)            Q [..., Lq, D], Kt [..., D, Lk]
//   S = Mul(S, c) | Div(S, c)    any number, c a scalar f32 constant (either operand of Mul)
//   S = Add(S, mask)             at most one, after the scaling; the mask broadcasts to S
//   P = Softmax(S) {axis = -1}   the last axis (before opset 13 too: nothing to flatten)
//   Y = MatMul(P, V)             V [..., Lk, Dv]
//
// Each intermediate must be read by the chain alone, everything f32 with Q, Kt and V of one
// rank, and the mask must not broadcast S up. The kernel computes a block of query rows at a
// time, so the [Lq, Lk] scores stay in the cache: the unfused chain writes them once and
// reads them three times (Whisper's [4, 1500, 1500]: 36 MB each way). Runs after dce (a
// Mul by 1 that simplify bypassed leaves a dead alias reading the product until then), and
// runs dce again when it fused anything: the chains' other bindings are dead.
#pragma once

#include <cstddef>

#include "compiler/passes/pass.h"

namespace dynvm::compiler {

struct FuseAttentionStats {
  size_t fused = 0;
};

PassResult fuse_attention(const TypedModule& in, FuseAttentionStats* stats = nullptr);

}  // namespace dynvm::compiler
