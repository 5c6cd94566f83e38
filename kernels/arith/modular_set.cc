// Divisibility (modular-set) analysis: for each node the largest known {coeff, base} with
// value == coeff*k + base. This is what lets a loop over n*16 be split by 16 without a tail.
// Any step whose arithmetic would overflow gives up to {1, 0} ("any integer"), never UB.
#include <optional>

#include "kernels/arith/analyzer.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

std::optional<ModularSet> normalized(std::optional<int64_t> coeff, std::optional<int64_t> base) {
  if (!coeff || !base) return std::nullopt;
  if (*coeff == 0) return ModularSet::exactly(*base);
  auto b = checked_floormod(*base, *coeff);
  return ModularSet{*coeff, *b};
}

ModularSet or_everything(std::optional<ModularSet> m) { return m ? *m : ModularSet::everything(); }

std::optional<int64_t> gcd3(std::optional<int64_t> a, std::optional<int64_t> b,
                            std::optional<int64_t> c) {
  if (!a || !b || !c) return std::nullopt;
  auto ab = checked_gcd(*a, *b);
  if (!ab) return std::nullopt;
  return checked_gcd(*ab, *c);
}

ModularSet add_sets(const ModularSet& a, const ModularSet& b) {
  return or_everything(normalized(checked_gcd(a.coeff, b.coeff), checked_add(a.base, b.base)));
}

ModularSet neg_set(const ModularSet& a) {
  auto base = checked_neg(a.base);
  return base ? or_everything(normalized(a.coeff, *base)) : ModularSet::everything();
}

// (c1*k1 + b1) * (c2*k2 + b2) = c1c2*k1k2 + c1b2*k1 + c2b1*k2 + b1b2.
ModularSet mul_sets(const ModularSet& a, const ModularSet& b) {
  auto coeff = gcd3(checked_mul(a.coeff, b.coeff), checked_mul(a.coeff, b.base),
                    checked_mul(b.coeff, a.base));
  return or_everything(normalized(coeff, checked_mul(a.base, b.base)));
}

// The values of either operand (min, max, select pick one of them).
ModularSet union_sets(const ModularSet& a, const ModularSet& b) {
  auto diff = checked_sub(a.base, b.base);
  auto coeff = gcd3(a.coeff, b.coeff, diff);
  return or_everything(normalized(coeff, a.base));
}

ModularSet floordiv_set(const ModularSet& a, int64_t c) {
  if (c < 0) {
    auto pos = checked_neg(c);
    return pos ? floordiv_set(neg_set(a), *pos) : ModularSet::everything();
  }
  if (a.coeff == 0) return or_everything(normalized(0, checked_floordiv(a.base, c)));
  // (c*m*k + b) floordiv c == m*k + (b floordiv c): exact when c divides the coefficient.
  if (a.coeff % c != 0) return ModularSet::everything();
  return or_everything(normalized(a.coeff / c, checked_floordiv(a.base, c)));
}

ModularSet floormod_set(const ModularSet& a, int64_t c) {
  if (c < 0) {
    auto pos = checked_neg(c);
    return pos ? neg_set(floormod_set(neg_set(a), *pos)) : ModularSet::everything();
  }
  if (a.coeff == 0) return ModularSet::exactly(*checked_floormod(a.base, c));
  // a mod c differs from a by a multiple of c, so it keeps a's residue modulo gcd(coeff, c);
  // when c divides coeff that residue pins the value (it lies in [0, c)).
  auto g = checked_gcd(a.coeff, c);
  if (!g) return ModularSet::everything();
  if (*g == c) return ModularSet::exactly(*checked_floormod(a.base, c));
  return or_everything(normalized(*g, a.base));
}

}  // namespace

bool ModularSet::holds_for(int64_t v) const {
  if (coeff == 0) return v == base;
  // Compare residues rather than test (v - base) mod coeff, which can overflow.
  return *checked_floormod(v, coeff) == *checked_floormod(base, coeff);
}

ModularSet Analyzer::modular_set_as_written(const Expr& e) const {
  DYNVM_INTERNAL_CHECK(e.defined(), "modular set of an undefined expression");
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kBoolImm:
      return ModularSet::exactly(e->value);
    case ExprKind::kVar: {
      const VarRange* r = range(e->var_id);
      if (r && r->min == r->max) return ModularSet::exactly(r->min);
      return ModularSet::everything();
    }
    case ExprKind::kAdd:
      return add_sets(modular_set_as_written(e.operand(0)), modular_set_as_written(e.operand(1)));
    case ExprKind::kSub:
      return add_sets(modular_set_as_written(e.operand(0)),
                      neg_set(modular_set_as_written(e.operand(1))));
    case ExprKind::kMul:
      return mul_sets(modular_set_as_written(e.operand(0)), modular_set_as_written(e.operand(1)));
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod: {
      ModularSet divisor = modular_set_as_written(e.operand(1));
      if (divisor.coeff != 0 || divisor.base == 0) return ModularSet::everything();
      ModularSet a = modular_set_as_written(e.operand(0));
      return e.kind() == ExprKind::kFloorDiv ? floordiv_set(a, divisor.base)
                                             : floormod_set(a, divisor.base);
    }
    case ExprKind::kMin:
    case ExprKind::kMax:
      return union_sets(modular_set_as_written(e.operand(0)), modular_set_as_written(e.operand(1)));
    case ExprKind::kSelect:
      return union_sets(modular_set_as_written(e.operand(1)), modular_set_as_written(e.operand(2)));
    default:
      // Conditions are 0 or 1; their bounds say more than a modular set could.
      return ModularSet::everything();
  }
}

}  // namespace dynvm::arith
