// Module lookups (see module.h).
#include "compiler/ir/module.h"

namespace dynvm::compiler {

const Function* Module::find_function(const std::string& name) const {
  for (const auto& f : functions) {
    if (f->name == name) return f.get();
  }
  return nullptr;
}

const DimSymbol* Module::find_dim(const std::string& name) const {
  for (const DimSymbol& d : dims) {
    if (d.var.name() == name) return &d;
  }
  return nullptr;
}

}  // namespace dynvm::compiler
