// Algebraic simplification of the typed IR: calls that provably compute their first input
// are bypassed, chains of data-movement calls are shortened, and every symbolic dim is put
// in the analyzer's canonical form. Runs after infer_types (it needs the types and facts to
// prove anything) and before fold_constants and dce; the bindings it bypasses are left
// for dce.
//
// Rewrites, each only when the types and facts prove it (dims compared with the module's
// dim ranges, arith::Analyzer::provably_equal; an Any dim proves nothing):
//   identities   Identity; Dropout whose training_mode is absent or a constant false;
//                Cast to the input's own dtype                                     -> x
//   no-op moves  Reshape / Flatten / Squeeze / Unsqueeze / Expand whose output type is the
//                input's; Transpose by the identity perm; Slice with unit steps that keeps
//                the input's type; Concat of one input; Pad by zeros               -> x
//   arithmetic   x * 1, 1 * x, x / 1, x - (+0), x + (-0), (-0) + x, and integer x + 0,
//                0 + x, when broadcasting does not grow x: bitwise the same in IEEE
//                arithmetic. Float x + (+0.0) stays: it turns -0.0 into +0.0    -> x
//   view chains  a chain of Reshape / Flatten / Squeeze / Unsqueeze ending in its root's
//                type (row-major order is kept by each, so same type = same tensor) -> root;
//                Reshape(view(x), s) with a constant s free of 0 entries -> Reshape(x, s);
//                Transpose(Transpose(x, p), q) -> Transpose(x, p∘q), or x when that is the
//                identity
//   dims         every type's dims, a function's parameter and result types, and the facts'
//                types and known values simplified over the module's dim ranges, so dims
//                that are equal print and compare the same downstream
// A use of a bypassed value becomes a use of its replacement; the let stays for dce. The
// facts of the let-bound variables that remain are kept (a rebuilt Reshape or Transpose
// computes the same value as the call it replaces).
#pragma once

#include <cstddef>

#include "compiler/passes/infer_types.h"

namespace dynvm::compiler {

struct SimplifyStats {
  size_t identities = 0;         // Identity, Dropout, Cast to the same dtype
  size_t noop_moves = 0;         // Reshape ... Pad that keep their input as it is
  size_t arithmetic = 0;         // x + 0, x - 0, x * 1, x / 1
  size_t view_chains = 0;        // view chains back to their root's type
  size_t reshapes_merged = 0;    // Reshape(view(x)) -> Reshape(x)
  size_t transposes_merged = 0;  // Transpose pairs composed (or removed)
  size_t dims_simplified = 0;    // distinct types and known values whose dims changed form

  size_t calls_rewritten() const {
    return identities + noop_moves + arithmetic + view_chains + reshapes_merged + transposes_merged;
  }
};

PassResult simplify(const TypedModule& typed, SimplifyStats* stats = nullptr);

}  // namespace dynvm::compiler
