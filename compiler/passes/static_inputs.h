// --static NAME=SHAPE (vmc): the entry's input NAME gets exactly SHAPE, and each of its
// symbolic dims that is a dim symbol of its own becomes that value everywhere (its range
// min = max = value, in other inputs too): a fully static executable, built to compare
// with the dynamic one. Runs first, on the untyped module. UserError for an input the
// model does not have, a rank that differs, or a constant dim given another value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/passes/pass.h"

namespace dynvm::compiler {

PassResult static_inputs(const TypedModule& in,
                         const std::map<std::string, std::vector<int64_t>>& shapes);

}  // namespace dynvm::compiler
