// Host shape arithmetic as bytecode: evaluates arith expressions of the module's dims into
// integer registers, sharing each distinct subexpression (a dim used by twenty
// allocations is computed once per function).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kernels/arith/expr.h"
#include "vm/executable.h"

namespace dynvm::compiler {

class ShapeCode {
 public:
  // `code` receives the instructions; `next_register` is the function's register counter.
  ShapeCode(std::vector<vm::Instruction>* code, uint32_t* next_register)
      : code_(code), next_register_(next_register) {}

  // The register holding dim variable `var` at run time (read from an input by the caller).
  void bind(const arith::Var& var, uint32_t reg) { vars_[var.id()] = reg; }
  bool is_bound(arith::VarId id) const { return vars_.count(id) > 0; }

  // A register holding e's value. UserError for a variable nobody bound or a boolean
  // expression.
  uint32_t emit(const arith::Expr& e);

  // Forgets computed subexpressions (their registers are not valid after a branch).
  void clear_cache() { cache_.clear(); }

 private:
  uint32_t fresh() { return (*next_register_)++; }

  std::vector<vm::Instruction>* code_;
  uint32_t* next_register_;
  std::unordered_map<arith::VarId, uint32_t> vars_;
  std::unordered_map<size_t, std::vector<std::pair<arith::Expr, uint32_t>>> cache_;
};

}  // namespace dynvm::compiler
