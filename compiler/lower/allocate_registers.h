// Register allocation: lowering gives every value its own virtual register; after memory
// planning and frees, registers whose values are never alive at the same time share one
// slot of the frame. Interference comes from liveness (liveness.h): a register written
// while another is live after the write interferes with it, and so do all the registers
// live together at the end of a block (which also covers values that are defined on only
// some paths into a join). Coloring is greedy in order of first appearance; parameters
// keep r0 .. r(num_params - 1), as the calling convention says. Frees stay correct: a Free
// comes after its register's last read, where nothing that shares its slot is live.
#pragma once

#include <cstddef>

#include "vm/executable.h"

namespace dynvm::compiler {

struct RegisterStats {
  size_t before = 0;  // virtual registers
  size_t after = 0;   // frame slots (fn.num_registers)
};

// Functions with more than this many virtual registers keep them (the interference
// matrix grows as the square).
inline constexpr size_t kMaxAllocatedRegisters = 1 << 15;

void allocate_registers(vm::Function& fn, RegisterStats* stats = nullptr);

}  // namespace dynvm::compiler
