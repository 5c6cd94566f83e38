// Reference evaluation with exact int64 arithmetic (see evaluate.h).
#include "kernels/arith/evaluate.h"

#include <algorithm>

#include "kernels/arith/int_math.h"
#include "kernels/arith/printer.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

int64_t fits(std::optional<int64_t> v, const Expr& e) {
  if (!v) user_error("integer overflow evaluating ", to_string(e));
  return *v;
}

}  // namespace

int64_t evaluate(const Expr& e, const VarValues& values) {
  DYNVM_INTERNAL_CHECK(e.defined(), "evaluating an undefined expression");
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kBoolImm:
      return e->value;
    case ExprKind::kVar: {
      auto it = values.find(e->var_id);
      if (it == values.end()) user_error("variable ", e->name, " has no value");
      return it->second;
    }
    case ExprKind::kNot:
      return evaluate(e.operand(0), values) == 0 ? 1 : 0;
    case ExprKind::kSelect: {
      int64_t cond = evaluate(e.operand(0), values);
      int64_t t = evaluate(e.operand(1), values);
      int64_t f = evaluate(e.operand(2), values);
      return cond != 0 ? t : f;
    }
    default:
      break;
  }
  int64_t a = evaluate(e.operand(0), values);
  int64_t b = evaluate(e.operand(1), values);
  switch (e.kind()) {
    case ExprKind::kAdd:
      return fits(checked_add(a, b), e);
    case ExprKind::kSub:
      return fits(checked_sub(a, b), e);
    case ExprKind::kMul:
      return fits(checked_mul(a, b), e);
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod:
      if (b == 0) user_error("division by zero evaluating ", to_string(e));
      return fits(e.kind() == ExprKind::kFloorDiv ? checked_floordiv(a, b) : checked_floormod(a, b),
                  e);
    case ExprKind::kMin:
      return std::min(a, b);
    case ExprKind::kMax:
      return std::max(a, b);
    case ExprKind::kEq:
      return a == b;
    case ExprKind::kNe:
      return a != b;
    case ExprKind::kLt:
      return a < b;
    case ExprKind::kLe:
      return a <= b;
    case ExprKind::kGt:
      return a > b;
    case ExprKind::kGe:
      return a >= b;
    case ExprKind::kAnd:
      return a != 0 && b != 0;
    case ExprKind::kOr:
      return a != 0 || b != 0;
    default:
      DYNVM_INTERNAL_CHECK(false, "no evaluation rule for ", kind_name(e.kind()));
      return 0;
  }
}

}  // namespace dynvm::arith
