// A graph IR module: the named symbolic dims its types use (with their declared ranges) and
// its functions; `entry` is what the compiled executable runs.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/expr.h"

namespace dynvm::compiler {

struct DimSymbol {
  arith::Var var;
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
};

struct Module {
  std::vector<DimSymbol> dims;
  std::vector<std::shared_ptr<const Function>> functions;
  std::string entry = "main";

  const Function* find_function(const std::string& name) const;
  const DimSymbol* find_dim(const std::string& name) const;
};

}  // namespace dynvm::compiler
