// Text form of TIR for people: IR dumps between passes (lower.cc's dump_after), test
// expectations and error messages. Python-like, one statement per line:
//
//   def add(A: f32[n], B: f32[n], out C: f32[n]):
//     for (i, 0, n) parallel:
//       C[i] = (A[i] + B[i])
//
// Vector accesses print as `A[ramp(base, stride, 16)]`. Not parsed back.
#pragma once

#include <ostream>
#include <string>

#include "kernels/tir/expr.h"
#include "kernels/tir/stmt.h"

namespace dynvm::tir {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::string to_string(const PrimFunc& f);
std::string to_string(const LoweredFunc& f);
std::string to_string(const Buffer& b);  // "C: f32[n, 16]"

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

}  // namespace dynvm::tir
