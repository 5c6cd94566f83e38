// The kernel of a fused group (a primitive function made by compiler/passes/fuse_ops): one
// KernelBinding whose build instantiates the anchor's kernels/ops builder and rebuilds it
// with the followers' elementwise math as its epilogue (ops::FusedEpilogue).
//
// Kernel arguments: the anchor's arguments, then each other tensor a follower reads (once
// each), all of them parameters of the fused function; a follower's scalar constants
// become immediates. The key names every member's own key and where each operand comes
// from, so equal groups on equal types share one kernel.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/expr.h"
#include "compiler/op/binding.h"

namespace dynvm::compiler {

// `params`: the facts of the call's arguments, one per parameter of `f`. The binding's
// `args` index the call's arguments.
KernelBinding fused_binding(const Function& f, const std::vector<ValueFacts>& params,
                            const std::string& where);

}  // namespace dynvm::compiler
