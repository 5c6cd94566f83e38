// Matrix products: matmul [M,K]x[K,N], batch_matmul [...,M,K]x[...,K,N] (batch broadcast) and
// ONNX-style gemm (transposes, alpha/beta, a bias C broadcast to [M,N], relu epilogue).
// Any dim may be symbolic (typically M, the batch*sequence dim).
//
// All three share one default schedule template, TVM's x86 dense idea: the output is tiled
// by (tile_m, tile_n); a register accumulator (cache_write "local", or the product stage
// of a gemm with an epilogue) is computed at each tile with loops (ko, ki, mi, ni): ni
// vectorized (tile_n / vector width zmm registers per row), mi and ki unrolled, so that
// LLVM keeps the tile_m x tile_n accumulators in registers and each step is one
// broadcast of A plus tile_n/16 FMAs per row. The outer (batch, M-tile) loop is parallel.
// With M symbolic, the M-tail tile (M mod tile_m rows) gets one unrolled copy per row count
// from the TIR pass specialize_extents, so it too stays in registers.
// Knobs: tile_m, tile_n, tile_k, parallel (0/1). preferred_multiples = {M: tile_m}.
#pragma once

#include <optional>

#include "kernels/ops/op.h"

namespace dynvm::ops {

enum class Epilogue : uint8_t { kNone, kRelu };

// a: [M, K], b: [K, N] (same dtype, K equal) -> [M, N].
OpInstance matmul(const TensorType& a, const TensorType& b);

// a: [..., M, K], b: [..., K, N] with numpy's broadcasting of the batch dims (any number,
// either side; b may be [K, N]) -> [batch..., M, N]. Rank >= 2 each.
OpInstance batch_matmul(const TensorType& a, const TensorType& b);

// B's columns in panels of kPackedPanel (one zmm of f32), each panel's K rows contiguous:
// Bp[p, k, c] = B[k, p*16 + c], zero past N. A constant B is packed at compile time
// (compiler/passes/pack_weights.h), so that a tile streams its panel from memory in order.
inline constexpr int64_t kPackedPanel = 16;

// a: [M, K] or [Batch, M, K], bp: [ceil(N/16), K, 16] (packed B) -> [M, N] / [Batch, M, N].
// The template above with tile_n a multiple of 16, each vector one panel; a [Batch, M, K]
// is one product of Batch*M rows (tiles of tile_m flat rows, read back as [Batch, M, N]),
// not Batch products of M rows: torch's [L, n, E] attention projections have M = n = 1.
OpInstance matmul_packed_b(const TensorType& a, const TensorType& bp, int64_t n);

// The template above applied to the 2-D stage `out` ([M, N]) of `s`, `acc` the product it
// stores (computed at its tiles), serially: for kernels whose product is one stage among
// others (recurrent.h's sequence kernels). `op` names the kernel in errors.
void schedule_product_tiles(te::Schedule& s, const te::TensorRef& out, const te::TensorRef& acc,
                            const std::string& op, int64_t tile_m, int64_t tile_n, int64_t tile_k);

struct GemmAttrs {
  bool trans_a = false;  // a is [K, M]
  bool trans_b = false;  // b is [N, K]
  double alpha = 1.0;
  double beta = 1.0;
  Epilogue epilogue = Epilogue::kNone;
};

// Y = epilogue(alpha * op(a) op(b) + beta * c); c (optional) has rank <= 2 and broadcasts
// to [M, N] numpy-style (a dim of literal 1 repeats).
OpInstance gemm(const TensorType& a, const TensorType& b, const std::optional<TensorType>& c,
                const GemmAttrs& attrs = {});

}  // namespace dynvm::ops
