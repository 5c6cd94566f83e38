// Expression nodes: construction with invariant checks, structural equality, hashing and the
// deterministic order that the canonical form sorts atoms by.
#include "kernels/arith/expr.h"

#include <atomic>
#include <utility>

#include "vm/error.h"

namespace dynvm::arith {
namespace {

size_t mix(size_t h, uint64_t v) {
  // splitmix64 finaliser over the combined value: cheap and well distributed.
  uint64_t x = static_cast<uint64_t>(h) ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return static_cast<size_t>(x ^ (x >> 31));
}

Expr finish(ExprNode node) {
  size_t h = mix(0, static_cast<uint64_t>(node.kind));
  h = mix(h, static_cast<uint64_t>(node.value));
  h = mix(h, node.var_id);
  for (int i = 0; i < kind_arity(node.kind); ++i) h = mix(h, node.operands[i]->hash);
  node.hash = h;
  return Expr(std::make_shared<const ExprNode>(std::move(node)));
}

void check_operand(const Expr& e, bool want_boolean, ExprKind parent) {
  DYNVM_INTERNAL_CHECK(e.defined(), "undefined operand of ", kind_name(parent));
  DYNVM_INTERNAL_CHECK(e.is_boolean() == want_boolean, kind_name(parent), " needs ",
                       want_boolean ? "a boolean" : "an integer", " operand, got ",
                       kind_name(e.kind()));
}

}  // namespace

const char* kind_name(ExprKind kind) {
  switch (kind) {
    case ExprKind::kIntImm:
      return "IntImm";
    case ExprKind::kBoolImm:
      return "BoolImm";
    case ExprKind::kVar:
      return "Var";
    case ExprKind::kAdd:
      return "Add";
    case ExprKind::kSub:
      return "Sub";
    case ExprKind::kMul:
      return "Mul";
    case ExprKind::kFloorDiv:
      return "FloorDiv";
    case ExprKind::kFloorMod:
      return "FloorMod";
    case ExprKind::kMin:
      return "Min";
    case ExprKind::kMax:
      return "Max";
    case ExprKind::kSelect:
      return "Select";
    case ExprKind::kEq:
      return "Eq";
    case ExprKind::kNe:
      return "Ne";
    case ExprKind::kLt:
      return "Lt";
    case ExprKind::kLe:
      return "Le";
    case ExprKind::kGt:
      return "Gt";
    case ExprKind::kGe:
      return "Ge";
    case ExprKind::kAnd:
      return "And";
    case ExprKind::kOr:
      return "Or";
    case ExprKind::kNot:
      return "Not";
  }
  return "?";
}

bool is_comparison_kind(ExprKind kind) { return kind >= ExprKind::kEq && kind <= ExprKind::kGe; }

bool is_boolean_kind(ExprKind kind) { return kind == ExprKind::kBoolImm || kind >= ExprKind::kEq; }

int kind_arity(ExprKind kind) {
  switch (kind) {
    case ExprKind::kIntImm:
    case ExprKind::kBoolImm:
    case ExprKind::kVar:
      return 0;
    case ExprKind::kNot:
      return 1;
    case ExprKind::kSelect:
      return 3;
    default:
      return 2;
  }
}

Expr::Expr(int64_t value) : Expr(make_int(value)) {}

ExprKind Expr::kind() const {
  DYNVM_INTERNAL_CHECK(defined(), "kind() of an undefined Expr");
  return node_->kind;
}

bool Expr::is_boolean() const { return is_boolean_kind(kind()); }

bool Expr::is_int_imm() const { return defined() && node_->kind == ExprKind::kIntImm; }

int64_t Expr::int_value() const {
  DYNVM_INTERNAL_CHECK(is_int_imm(), "int_value() of a non-constant");
  return node_->value;
}

const Expr& Expr::operand(int i) const {
  DYNVM_INTERNAL_CHECK(defined() && i >= 0 && i < kind_arity(node_->kind), "operand ", i,
                       " out of range");
  return node_->operands[i];
}

Var::Var(std::string name) {
  static std::atomic<VarId> next_id{1};
  ExprNode node;
  node.kind = ExprKind::kVar;
  node.var_id = next_id.fetch_add(1, std::memory_order_relaxed);
  node.name = std::move(name);
  expr_ = finish(std::move(node));
}

Var::Var(Expr expr) : expr_(std::move(expr)) {
  DYNVM_INTERNAL_CHECK(expr_.defined() && expr_.kind() == ExprKind::kVar,
                       "Var from a non-variable expression");
}

Expr make_int(int64_t value) {
  ExprNode node;
  node.kind = ExprKind::kIntImm;
  node.value = value;
  return finish(std::move(node));
}

Expr make_bool(bool value) {
  ExprNode node;
  node.kind = ExprKind::kBoolImm;
  node.value = value ? 1 : 0;
  return finish(std::move(node));
}

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  DYNVM_INTERNAL_CHECK(kind_arity(kind) == 2, kind_name(kind), " is not a binary kind");
  bool logic = kind == ExprKind::kAnd || kind == ExprKind::kOr;
  check_operand(a, logic, kind);
  check_operand(b, logic, kind);
  ExprNode node;
  node.kind = kind;
  node.operands = {std::move(a), std::move(b), Expr()};
  return finish(std::move(node));
}

Expr make_select(Expr cond, Expr true_value, Expr false_value) {
  check_operand(cond, true, ExprKind::kSelect);
  check_operand(true_value, false, ExprKind::kSelect);
  check_operand(false_value, false, ExprKind::kSelect);
  ExprNode node;
  node.kind = ExprKind::kSelect;
  node.operands = {std::move(cond), std::move(true_value), std::move(false_value)};
  return finish(std::move(node));
}

Expr make_not(Expr a) {
  check_operand(a, true, ExprKind::kNot);
  ExprNode node;
  node.kind = ExprKind::kNot;
  node.operands = {std::move(a), Expr(), Expr()};
  return finish(std::move(node));
}

Expr operator+(const Expr& a, const Expr& b) { return make_binary(ExprKind::kAdd, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return make_binary(ExprKind::kSub, a, b); }
Expr operator*(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMul, a, b); }
Expr operator-(const Expr& a) { return make_binary(ExprKind::kSub, make_int(0), a); }
Expr floordiv(const Expr& a, const Expr& b) { return make_binary(ExprKind::kFloorDiv, a, b); }
Expr floormod(const Expr& a, const Expr& b) { return make_binary(ExprKind::kFloorMod, a, b); }
Expr min(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMin, a, b); }
Expr max(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMax, a, b); }
Expr select(const Expr& cond, const Expr& true_value, const Expr& false_value) {
  return make_select(cond, true_value, false_value);
}
Expr eq(const Expr& a, const Expr& b) { return make_binary(ExprKind::kEq, a, b); }
Expr ne(const Expr& a, const Expr& b) { return make_binary(ExprKind::kNe, a, b); }
Expr lt(const Expr& a, const Expr& b) { return make_binary(ExprKind::kLt, a, b); }
Expr le(const Expr& a, const Expr& b) { return make_binary(ExprKind::kLe, a, b); }
Expr gt(const Expr& a, const Expr& b) { return make_binary(ExprKind::kGt, a, b); }
Expr ge(const Expr& a, const Expr& b) { return make_binary(ExprKind::kGe, a, b); }
Expr logical_and(const Expr& a, const Expr& b) { return make_binary(ExprKind::kAnd, a, b); }
Expr logical_or(const Expr& a, const Expr& b) { return make_binary(ExprKind::kOr, a, b); }
Expr logical_not(const Expr& a) { return make_not(a); }

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.get() == b.get()) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->hash != b->hash || a->kind != b->kind || a->value != b->value || a->var_id != b->var_id) {
    return false;
  }
  for (int i = 0; i < kind_arity(a->kind); ++i) {
    if (!structural_equal(a->operands[i], b->operands[i])) return false;
  }
  return true;
}

size_t structural_hash(const Expr& e) { return e.defined() ? e->hash : 0; }

int structural_compare(const Expr& a, const Expr& b) {
  if (a.get() == b.get()) return 0;
  if (!a.defined() || !b.defined()) return a.defined() ? 1 : -1;
  auto three_way = [](auto x, auto y) { return x < y ? -1 : (x > y ? 1 : 0); };
  if (int c = three_way(a->kind, b->kind)) return c;
  if (int c = three_way(a->value, b->value)) return c;
  if (int c = three_way(a->var_id, b->var_id)) return c;
  for (int i = 0; i < kind_arity(a->kind); ++i) {
    if (int c = structural_compare(a->operands[i], b->operands[i])) return c;
  }
  return 0;
}

bool uses_var(const Expr& e, VarId id) {
  if (e.kind() == ExprKind::kVar) return e->var_id == id;
  for (int i = 0; i < kind_arity(e.kind()); ++i) {
    if (uses_var(e.operand(i), id)) return true;
  }
  return false;
}

}  // namespace dynvm::arith
