// The TIR verifier: the contract between passes. lower.cc runs it after the last pass
// (and tests after every pass); a function that passes verify() at a stage has every
// variable bound, every buffer in scope, consistent types, and only the node and loop kinds
// that are legal at that stage, so code generation needs no checks of its own.
#pragma once

#include <cstdint>

#include "kernels/tir/stmt.h"

namespace dynvm::tir {

// How far lowering has gone; each stage adds the rules of the ones before it.
enum class VerifyStage : uint8_t {
  kLowered,     // just out of TE lowering: multi-dim accesses, any loop kinds
  kVectorized,  // after vectorize: no kVectorized loops remain
  kUnrolled,    // after unroll: no kUnrolled loops remain
  kFlattened,   // after flatten_storage: every access has exactly one (flat) index
};

// Throws InternalError naming the function and the offending node.
void verify(const PrimFunc& f, VerifyStage stage);
// After outline_parallel: the entry may hold parallel calls to existing regions, and each
// region body may use only its loop variable, its captured variables and buffers, and
// contains no parallel loop.
void verify(const LoweredFunc& f, VerifyStage stage = VerifyStage::kFlattened);

}  // namespace dynvm::tir
