// Lowering TE + schedule to a TIR PrimFunc (before storage flattening): one loop nest per
// stage in leaf order, split / fuse turned into index arithmetic, guards for splits that
// may not divide, reductions as an init store plus an update loop, compute_at stages placed
// inside their consumer's loop computing only the region it reads, inlined stages
// substituted. TensorReads become multi-dimensional BufferLoads; LetIndex is kept.
#pragma once

#include <string>
#include <vector>

#include "kernels/te/schedule.h"
#include "kernels/tir/stmt.h"

namespace dynvm::te {

// args: the kernel's parameters in ABI order, its inputs (placeholders) first, then its
// outputs (computes; every output of the schedule must be among them). Each argument gets
// a kGlobal buffer; other stages get kLocal (small, static) or kWorkspace buffers.
// UserError when the program or schedule cannot be lowered (a read placeholder that is not
// an argument, a compute_at whose consumer is not the stage's only reader, ...).
tir::PrimFunc lower(const Schedule& schedule, const std::vector<TensorRef>& args,
                    const std::string& name);

}  // namespace dynvm::te
