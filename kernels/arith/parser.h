// Reads the text form of expressions (printer.h) for tests and the IR text format:
//   integers, identifiers, + - * ( ), `//` or `floordiv`, `%` or `floormod`,
//   min(a, b), max(a, b), select(cond, a, b), == != < <= > >=, && || !, true, false.
// Errors (bad syntax, a condition where an integer belongs, a number out of range) are
// dynvm::UserError naming the column.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "kernels/arith/expr.h"

namespace dynvm::arith {

// The variables a text refers to, by name. Parsing creates a variable the first time its
// name appears, so parsing several texts with one scope makes them share variables.
class VarScope {
 public:
  // The variable called name, created if the scope has none yet.
  Var get(const std::string& name);
  // Makes an existing variable visible under its name (replacing any other of that name).
  void add(const Var& v);
  const Var* find(std::string_view name) const;

 private:
  std::map<std::string, Var, std::less<>> vars_;
};

Expr parse_expr(std::string_view text, VarScope& scope);

}  // namespace dynvm::arith
