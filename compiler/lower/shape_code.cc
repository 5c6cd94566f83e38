// Host shape arithmetic (see shape_code.h).
#include "compiler/lower/shape_code.h"

#include "kernels/arith/printer.h"
#include "vm/error.h"

namespace dynvm::compiler {

uint32_t ShapeCode::emit(const arith::Expr& e) {
  if (e.kind() == arith::ExprKind::kVar) {
    auto it = vars_.find(e->var_id);
    if (it != vars_.end()) return it->second;
  }
  const size_t hash = arith::structural_hash(e);
  for (const auto& [expr, reg] : cache_[hash]) {
    if (arith::structural_equal(expr, e)) return reg;
  }
  uint32_t dst = emit_node(e);
  cache_[hash].emplace_back(e, dst);
  return dst;
}

uint32_t ShapeCode::op(vm::Opcode code, std::vector<int64_t> operands) {
  uint32_t dst = fresh();
  operands.insert(operands.begin(), dst);
  code_->push_back({code, std::move(operands)});
  return dst;
}

uint32_t ShapeCode::emit_node(const arith::Expr& e) {
  using arith::ExprKind;
  auto cmp = [&](vm::CmpKind k, const arith::Expr& a, const arith::Expr& b) {
    int64_t x = emit(a), y = emit(b);
    return op(vm::Opcode::CmpI, {static_cast<int64_t>(k), x, y});
  };
  switch (e.kind()) {
    case ExprKind::kVar: {
      std::optional<uint32_t> r = resolve_ ? resolve_(arith::Var(e)) : std::nullopt;
      if (!r) user_error("dim ", e->name, " is not known at run time (no input has it as a dim)");
      return *r;
    }
    case ExprKind::kIntImm:
      return op(vm::Opcode::LoadImm, {e.int_value()});
    case ExprKind::kBoolImm:
      return op(vm::Opcode::LoadImm, {e->value});
    case ExprKind::kEq:
      return cmp(vm::CmpKind::kEq, e.operand(0), e.operand(1));
    case ExprKind::kNe:
      return cmp(vm::CmpKind::kNe, e.operand(0), e.operand(1));
    case ExprKind::kLt:
      return cmp(vm::CmpKind::kLt, e.operand(0), e.operand(1));
    case ExprKind::kLe:
      return cmp(vm::CmpKind::kLe, e.operand(0), e.operand(1));
    case ExprKind::kGt:
      return cmp(vm::CmpKind::kGt, e.operand(0), e.operand(1));
    case ExprKind::kGe:
      return cmp(vm::CmpKind::kGe, e.operand(0), e.operand(1));
    case ExprKind::kNot:
      return cmp(vm::CmpKind::kEq, e.operand(0), arith::make_int(0));
    case ExprKind::kSelect: {
      int64_t c = emit(e.operand(0)), a = emit(e.operand(1)), b = emit(e.operand(2));
      return op(vm::Opcode::SelectI, {c, a, b});
    }
    default:
      break;
  }
  vm::Opcode code;
  switch (e.kind()) {
    case ExprKind::kAdd:
      code = vm::Opcode::AddI;
      break;
    case ExprKind::kSub:
      code = vm::Opcode::SubI;
      break;
    case ExprKind::kMul:
      code = vm::Opcode::MulI;
      break;
    case ExprKind::kFloorDiv:
      code = vm::Opcode::DivI;
      break;  // floor, as arith
    case ExprKind::kFloorMod:
      code = vm::Opcode::ModI;
      break;
    case ExprKind::kMin:
    case ExprKind::kAnd:  // booleans are 0 / 1
      code = vm::Opcode::MinI;
      break;
    case ExprKind::kMax:
    case ExprKind::kOr:
      code = vm::Opcode::MaxI;
      break;
    default:
      user_error("cannot compute the dim expression ", arith::to_string(e), " on the host yet");
  }
  int64_t a = emit(e.operand(0)), b = emit(e.operand(1));
  return op(code, {a, b});
}

uint32_t ShapeCode::emit_shape(const std::vector<int64_t>& dim_registers) {
  auto it = shapes_.find(dim_registers);
  if (it != shapes_.end()) return it->second;
  const uint32_t dst = fresh();
  std::vector<int64_t> args{dst};
  args.insert(args.end(), dim_registers.begin(), dim_registers.end());
  code_->push_back({vm::Opcode::MakeShape, std::move(args)});
  shapes_.emplace(dim_registers, dst);
  return dst;
}

}  // namespace dynvm::compiler
