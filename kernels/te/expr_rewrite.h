// Internal to kernels/te: rebuilding expressions with index variables replaced, used by
// cache_write (re-homing a body onto new axes), compute_inline (a producer's body put in
// place of each read) and lowering (tensor axes replaced by loop expressions); and the
// renaming of loops that would shadow an enclosing loop's name in IR dumps.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include "kernels/arith/expr.h"
#include "kernels/tir/expr.h"
#include "kernels/tir/stmt.h"

namespace dynvm::te {

using IndexMap = std::unordered_map<arith::VarId, arith::Expr>;

// e with every variable in `map` replaced (one pass: replacements are not re-substituted).
arith::Expr substitute_index(const arith::Expr& e, const IndexMap& map);

// Called on each kTensorRead after its indices were rewritten; returns what replaces it.
using ReadHook = std::function<tir::Expr(const tir::Expr& read)>;

// Rebuilds e with the index variables in `map` replaced wherever an index appears (loads,
// reads, index values, reduce extents) and reads passed through `on_read` (if set).
// Every LetIndex gets a fresh variable, so a body copied into several places never binds
// one variable twice.
tir::Expr substitute(const tir::Expr& e, const IndexMap& map, const ReadHook& on_read = {});

// Loops are named after their axes ("i0.outer"), so a stage computed inside another's loop
// often repeats an enclosing loop's name. Variables are told apart by identity, but a
// person reading a dump is not: each loop whose name is already used by an enclosing loop
// gets a fresh variable named `qualified[var]` (e.g. "B.i0.outer"), or a primed name.
tir::Stmt rename_shadowing_loops(const tir::Stmt& body,
                                 const std::unordered_map<arith::VarId, std::string>& qualified);

}  // namespace dynvm::te
