// Host shape arithmetic (see shape_code.h).
#include "compiler/lower/shape_code.h"

#include "kernels/arith/printer.h"
#include "vm/error.h"

namespace dynvm::compiler {

uint32_t ShapeCode::emit(const arith::Expr& e) {
  if (e.kind() == arith::ExprKind::kVar) {
    auto it = vars_.find(e->var_id);
    if (it == vars_.end()) {
      user_error("dim ", e->name, " is not known at run time (no input has it as a dim)");
    }
    return it->second;
  }
  const size_t hash = arith::structural_hash(e);
  for (const auto& [expr, reg] : cache_[hash]) {
    if (arith::structural_equal(expr, e)) return reg;
  }
  uint32_t dst = 0;
  if (e.is_int_imm()) {
    dst = fresh();
    code_->push_back({vm::Opcode::LoadImm, {dst, e.int_value()}});
  } else {
    vm::Opcode op;
    switch (e.kind()) {
      case arith::ExprKind::kAdd:
        op = vm::Opcode::AddI;
        break;
      case arith::ExprKind::kSub:
        op = vm::Opcode::SubI;
        break;
      case arith::ExprKind::kMul:
        op = vm::Opcode::MulI;
        break;
      case arith::ExprKind::kFloorDiv:
        op = vm::Opcode::DivI;
        break;  // floor, as arith
      case arith::ExprKind::kFloorMod:
        op = vm::Opcode::ModI;
        break;
      case arith::ExprKind::kMin:
        op = vm::Opcode::MinI;
        break;
      case arith::ExprKind::kMax:
        op = vm::Opcode::MaxI;
        break;
      default:
        user_error("cannot compute the dim expression ", arith::to_string(e), " on the host yet");
    }
    uint32_t a = emit(e.operand(0));
    uint32_t b = emit(e.operand(1));
    dst = fresh();
    code_->push_back({op, {dst, a, b}});
  }
  cache_[hash].emplace_back(e, dst);
  return dst;
}

}  // namespace dynvm::compiler
