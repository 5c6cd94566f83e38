// The last lowering step: every kernel the bytecode calls (Lowered::kernels) specialized for
// the sizes asked for and for residue classes (kernels/dispatch), compiled in one LLVM run
// into one shared library, and the executable's kernel table filled with the variants and
// their dispatch conditions.
#pragma once

#include <cstddef>

#include "compiler/lower/lower.h"

namespace dynvm::compiler {

struct KernelStats {
  size_t kernels = 0;
  size_t variants = 0;
  size_t tuned = 0;   // kernels whose knobs came from LowerOptions::tuned_knobs
  size_t ranked = 0;  // kernels whose knobs the cost model chose (LowerOptions::rank_schedules)
};

// UserError when the kernel device has no code generator (only the CPU has one).
void generate_kernels(Lowered& lowered, const LowerOptions& options, KernelStats* stats = nullptr);

}  // namespace dynvm::compiler
