// TEST-ONLY reference interpreter for TIR. It runs a PrimFunc or LoweredFunc directly on host
// tensors so that every pass can be tested as "same outputs before and after", without
// LLVM. It is the semantics the passes must preserve, written as plainly as possible: every
// access is bounds-checked (per dim before flattening), locally allocated buffers start out
// poisoned, parallel loops and regions run serially, vector accesses lane by lane.
// Never shipped; the runtime executes generated code, not this.
#pragma once

#include <stdexcept>
#include <vector>

#include "kernels/tir/stmt.h"
#include "vm/tensor.h"

namespace dynvm::tir::testing {

// What the interpreter reports: an out-of-bounds access, an unbound variable, a division by
// zero, a shape that contradicts the function's symbolic dims, ...
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs f with args bound to its params in order (inputs, then outputs); outputs are written
// in place. Symbolic dims are bound from the args' shapes.
void evaluate(const PrimFunc& f, const std::vector<vm::Tensor>& args);
// Same, with parallel calls running their region over its captured variables and buffers
// only (what outlining promised the region needs).
void evaluate(const LoweredFunc& f, const std::vector<vm::Tensor>& args);

}  // namespace dynvm::tir::testing
