// Host shape arithmetic as bytecode: evaluates arith expressions of the module's dims into
// integer registers, sharing each distinct subexpression (a dim used by twenty
// allocations is computed once per function).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
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

  // Materializes a variable nobody bound: emits the instructions that read it (a run-time
  // value's element, a result's dim) and returns their register, or nullopt when the
  // variable is unknown. What it emits is valid where it is emitted, so it is cached like a
  // computed subexpression (scoped by save / restore).
  using Resolver = std::function<std::optional<uint32_t>(const arith::Var&)>;
  void set_resolver(Resolver r) { resolve_ = std::move(r); }

  // The register holding dim variable `var` at run time (read from an input by the caller).
  void bind(const arith::Var& var, uint32_t reg) { vars_[var.id()] = reg; }
  bool is_bound(arith::VarId id) const { return vars_.count(id) > 0; }

  // A register holding e's value (booleans as 0 / 1). UserError for a variable nobody bound
  // and the resolver does not know.
  uint32_t emit(const arith::Expr& e);

  // A register holding the shape value whose dims are in `dim_registers` (a MakeShape),
  // cached like the subexpressions: the outputs of one shape in a block share one.
  uint32_t emit_shape(const std::vector<int64_t>& dim_registers);

  // The computed subexpressions and shapes, to go back to after an If branch or a Loop body:
  // what was computed before it is valid in it (those registers dominate it, and a Loop
  // keeps them live around its back edge), what it computed is not valid past it.
  struct Saved {
    std::unordered_map<size_t, std::vector<std::pair<arith::Expr, uint32_t>>> cache;
    std::map<std::vector<int64_t>, uint32_t> shapes;
  };
  Saved save() const { return Saved{cache_, shapes_}; }
  void restore(const Saved& saved) {
    cache_ = saved.cache;
    shapes_ = saved.shapes;
  }

 private:
  uint32_t fresh() { return (*next_register_)++; }

  uint32_t emit_node(const arith::Expr& e);
  uint32_t op(vm::Opcode code, std::vector<int64_t> operands);

  std::vector<vm::Instruction>* code_;
  uint32_t* next_register_;
  std::unordered_map<arith::VarId, uint32_t> vars_;
  Resolver resolve_;
  std::unordered_map<size_t, std::vector<std::pair<arith::Expr, uint32_t>>> cache_;
  std::map<std::vector<int64_t>, uint32_t> shapes_;
};

}  // namespace dynvm::compiler
