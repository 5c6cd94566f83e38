// Free at last use: after lowering (and memory planning), each register is freed right
// after the last instruction that reads it on its path, so tensors go back to the pool
// (or their storage to the next user) while the function still runs. Liveness
// (liveness.h) is computed over the control-flow graph, so functions with If and Loop
// free as well: a register read in a loop body but live around the back edge stays, and
// one that dies on entry to a branch (read only on the other side) is freed at the
// branch's start. A register read by a jump or a Ret is not freed (the frame's registers
// all go when the function returns).
#pragma once

#include "vm/executable.h"

namespace dynvm::compiler {

struct FreeStats {
  size_t frees = 0;  // Free instructions inserted
};

void insert_frees(vm::Function& fn, FreeStats* stats = nullptr);

}  // namespace dynvm::compiler
