// Dead code elimination: removes let bindings whose variable is never used, in function
// bodies, If branches and Loop bodies, and functions the entry cannot reach. Values are
// pure, so a binding nobody reads is dead whatever it computes (a `dynvm.Unreachable`
// bound to an unused variable included: it only fails where its value is needed, and a
// used one stays). Loop body parameters and the loop's carried values are kept (the
// body's signature); chains of dead bindings go in one pass (uses are collected from the
// end of each chain backwards). Runs after fold_constants, whose folded lets leave their
// former operands unused.
#pragma once

#include <cstddef>

#include "compiler/passes/pass.h"

namespace dynvm::compiler {

struct DceStats {
  size_t lets_removed = 0;
  size_t functions_removed = 0;
};

PassResult dce(const TypedModule& in, DceStats* stats = nullptr);

}  // namespace dynvm::compiler
