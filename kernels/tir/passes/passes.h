// The TIR lowering passes, one file each (file name = pass name). Each takes a function and
// returns the rewritten one; lower.cc runs them in order. What each pass promises, and where
// it gives up (always falling back to correct, slower code), is written at the top of its .cc.
#pragma once

#include "kernels/tir/stmt.h"

namespace dynvm::tir {

// Simplifies every index expression with what is known in scope (loop ranges, dims >= 0),
// removes loops of extent 1 and ifs whose condition is decided. With
// `single_iterations` (the last simplify, after vectorize), also serial loops of at most one
// iteration: an if around the body at the min.
PrimFunc simplify(PrimFunc f);
PrimFunc simplify(PrimFunc f, bool single_iterations);
// Splits loops guarded by a condition affine in the loop variable (an if, or a select in a
// stored value) into a guard-free main part and the head / tail that keep the guard.
PrimFunc loop_partition(PrimFunc f);
// kUnrolled loops whose symbolic extent takes few values (a split's remainder, 0..7) get one
// copy per value behind `if (extent == c)`, at most max_copies copies of a statement.
PrimFunc specialize_extents(PrimFunc f, int64_t max_copies);
// kVectorized loops become vector loads, stores and arithmetic (or serial loops when the
// body cannot be vectorized).
PrimFunc vectorize(PrimFunc f);
// kUnrolled loops of constant extent <= kMaxUnrollExtent are replicated.
inline constexpr int64_t kMaxUnrollExtent = 64;
PrimFunc unroll(PrimFunc f);
// Multi-dim buffer accesses become one row-major flat index.
PrimFunc flatten_storage(PrimFunc f);
// Outermost parallel loops become parallel calls to outlined regions.
LoweredFunc outline_parallel(PrimFunc f);

}  // namespace dynvm::tir
