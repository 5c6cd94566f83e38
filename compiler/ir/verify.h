// The graph IR's verifier: the structural invariants every pass keeps, checked after each
// pass by the pipeline when asked (`vmc --verify-each`, and always in a build without
// NDEBUG: the Debug and sanitizer builds). A violation is a bug in the pass that ran last,
// so it is an InternalError naming that pass and the first violation found:
//   - the entry function exists, function names are unique;
//   - every variable is bound once in the module (a parameter, a let, a Loop body
//     parameter) and used only where its binding is in scope: after it in its let chain,
//     inside the chain's later values and nested bodies (Loop bodies may read outer
//     variables; module functions read only their parameters);
//   - calls of module functions name one and pass as many arguments as it takes;
//   - with `typed` (after infer_types): every expression, parameter and function result
//     has a type; an If's condition is a bool tensor; a get_item reads a field its tuple
//     has; a Loop body returns (cond, carried..., scans...) and the Loop's value is
//     (carried..., scans...).
#pragma once

#include <string>

#include "compiler/ir/module.h"

namespace dynvm::compiler {

void verify_module(const Module& module, bool typed, const std::string& after_pass);

}  // namespace dynvm::compiler
