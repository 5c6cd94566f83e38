// Constant folding: every call whose operands are all compile-time constants (Constant
// nodes, let variables bound to constants, results folded earlier in the same pass) is
// evaluated and replaced by a Constant, in the entry, other functions, If branches and
// Loop bodies alike (loop-invariant weight math such as the transposes expand_recurrent
// makes). No operator is evaluated by C++ written for it: the foldable calls of the whole
// module become one small module (a function without parameters returning them all),
// which is typed, lowered (pipeline.h's lower_module: one kernel library, one LLVM compile)
// and run on the VM like any model; the results replace the calls.
//
// Calls whose operands are not all constants but whose value inference knows as numbers
// (ValueFacts::value with every element a constant: a static dim read off the Shape of a
// tensor with symbolic dims, `D // heads` of it) become that Constant with nothing run, so
// an attention scale of sqrt(D / heads) is a constant to fuse_attention; not when the call
// is a `dynvm.*` op or carries run-time checks of its own.
//
// Not folded: `dynvm.*` ops, calls without operands or without a kernel binding, calls
// whose output type is not fully static or has more than kMaxFoldedElements elements.
// If and Loop are never folded themselves (calls inside them are). When the batch cannot
// be lowered or run (a UserError: an op's binding refuses a dtype, a kernel fails on a
// value), nothing is folded: the module is returned unchanged and `FoldStats::error` says
// why. An InternalError (a dynvm bug) is not caught.
//
// Runs on the typed module (after infer_types) and re-types what it folded, so later
// steps see the folded values as constants (ValueFacts::constant); the folded lets' old
// operands are left for dce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/passes/infer_types.h"

namespace dynvm::compiler {

inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;

struct FoldStats {
  size_t calls_folded = 0;
  std::string error;  // non-empty: the batch failed and nothing was folded
};

PassResult fold_constants(const TypedModule& typed, FoldStats* stats = nullptr);

}  // namespace dynvm::compiler
