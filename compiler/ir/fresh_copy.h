// A copy of an expression with every variable it binds made fresh, so that two copies can
// live in one function (type inference and lowering key what they know by variable), and
// the free variables in `renamed` (by var_id) replaced. Nodes that bind nothing and read no
// renamed variable stay shared (constants: the executable stores each once). Loop bodies'
// parameters are binders too. Used where a pass duplicates code: version_entry's versions,
// type inference's split continuations.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "compiler/ir/expr.h"

namespace dynvm::compiler {

Expr fresh_copy(const Expr& e, std::unordered_map<uint64_t, Expr> renamed);

}  // namespace dynvm::compiler
