// Memory planning: after lowering, before Frees are inserted, the storages a function
// allocates are planned at compile time, from register liveness (liveness.h) and the
// symbolic sizes of the allocations.
//
//   1. Arenas for static sizes. In each basic block, the storages whose size is a
//      constant and whose tensors all die in the block are packed into ONE allocation:
//      each gets an offset, and storages whose lifetimes overlap never share bytes
//      (greedy by size, best-fitting gap first). One `alloc_storage` replaces many.
//   1b. Arenas for symbolic sizes. The storages of a block whose sizes are expressions of
//      the input dims (not constants) and whose tensors all die in the block share one
//      allocation too: laid out by 1.'s packer at typical dims, kept as an order (each
//      above those it overlaps in time and lay below it), with the arena's size and every
//      offset computed from the input dims where the first storage is allocated.
//   2. Reuse for symbolic sizes. In each basic block, in order, an allocation takes over
//      a storage allocated earlier in the block whose tensors are all dead by then and
//      whose size is provably at least as large for every value of the input dims in
//      their declared ranges (arith::Analyzer): `alloc_storage s, size` becomes
//      `move s, old`. A storage handed on keeps its original size for the next taker.
//   3. Integer code that only computed the sizes of allocations that are gone is removed.
//
// A storage whose tensors live past the end of its block (returned, carried by a Loop,
// joined by an If) is left alone: it is allocated as before. So is one whose size
// register is written more than once, or whose tensors sit at a non-zero offset (the
// Loop's stacked scan outputs). Kernels never see their output alias an input: a storage
// becomes free only after the last instruction that reads any of its tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "vm/executable.h"

namespace dynvm::compiler {

struct MemoryPlanStats {
  size_t storages = 0;       // alloc_storage instructions before planning
  size_t reused = 0;         // became a move of a dead storage (2.)
  size_t arenas = 0;         // arenas created (1.)
  size_t in_arenas = 0;      // storages placed in an arena
  int64_t static_bytes = 0;  // their sizes added up
  int64_t arena_bytes = 0;   // the arenas' sizes added up (<= static_bytes)
  size_t symbolic_arenas = 0;     // arenas of symbolic size created (1b.)
  size_t in_symbolic_arenas = 0;  // storages placed in them
  size_t removed = 0;        // dead integer instructions removed (3.)
};

// `inputs`: the function's parameter signature (exe.inputs for the entry), whose dim
// ranges bound the symbolic sizes. fn.num_registers grows by the registers planning adds.
void plan_memory(vm::Function& fn, const std::vector<vm::TensorSpec>& inputs,
                 MemoryPlanStats* stats = nullptr);

}  // namespace dynvm::compiler
