// The text form of the graph IR, for tests and `vmc --dump-ir`. parse_module (parser.h)
// reads it back. Example:
//
//   dim seq: 1..512
//
//   fn @main(%x: f32[seq, 80], %w: f32[80, 64]) -> f32[seq, 64] {
//     %0: f32[seq, 64] = matmul(%x, %w)
//     %1 = if %c {
//       return relu(%0)
//     } else {
//       return %0
//     }
//     %2 = loop(max_trip=%n, cond=none, %1) scan_outputs=1
//          fn(%i: i64[], %go: bool[], %a: f32[seq, 64]) {
//       return (%go, %a, reduce_sum(%a) {axes=[0]})
//     }
//     return %2.0
//   }
//
// Function bodies print as one binding per let (A-normal form); operands that are not
// bound print inline. Variables print as `%name` (characters other than letters, digits
// and `_` become `_`; made unique per function by a suffix);
// constants as `const(f32[2], [1.5, -2])`, with values elided past `max_constant_elements`
// (such text is for reading and does not parse back).
#pragma once

#include <cstddef>
#include <string>

#include "compiler/ir/module.h"

namespace dynvm::compiler {

struct PrintOptions {
  bool types = true;                  // `%v: type = ...` where the binding's value has one
  size_t max_constant_elements = 64;  // SIZE_MAX: every constant in full (parses back)
};

std::string print_module(const Module& module, const PrintOptions& options = {});
std::string print_function(const Function& function, const PrintOptions& options = {});
// One expression on one line (bindings inside it print as nested blocks), for messages.
std::string print_expr(const Expr& e, const PrintOptions& options = {});

}  // namespace dynvm::compiler
