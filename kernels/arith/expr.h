// Symbolic integer expressions, the vocabulary shared by TIR (loop extents, indices) and the
// compiler's shape inference (symbolic dims such as `seq*2` or `(w - 1) floordiv 8 + 1`).
// Nodes are immutable and shared: an `Expr` is a cheap handle (a shared_ptr to a const
// node), so rewriting builds new nodes and never mutates one that someone else holds.
// Builders here do NOT simplify; `simplify` (simplify.h) does that with an Analyzer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dynvm::arith {

// Integer kinds produce int64 values; boolean kinds (kBoolImm and the comparisons/logic
// after kSelect) produce conditions, usable only as select's condition and in && || !.
enum class ExprKind : uint8_t {
  kIntImm,
  kBoolImm,
  kVar,
  kAdd,
  kSub,
  kMul,
  kFloorDiv,
  kFloorMod,
  kMin,
  kMax,
  kSelect,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
  kNot,
};

const char* kind_name(ExprKind kind);
bool is_boolean_kind(ExprKind kind);
bool is_comparison_kind(ExprKind kind);
// Number of operands a node of this kind has (0 for leaves, 3 for select).
int kind_arity(ExprKind kind);

// Identity of a variable. Two variables with the same name are different variables.
using VarId = uint64_t;

struct ExprNode;

// A handle to an immutable expression node; default-constructed handles are undefined.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  // An integer constant; implicit so that `x * 16 + 3` and `floordiv(n, 8)` read naturally.
  Expr(int64_t value);  // NOLINT(google-explicit-constructor)

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  const ExprNode& operator*() const { return *node_; }

  ExprKind kind() const;
  bool is_boolean() const;
  // For kIntImm nodes: the value. For anything else: false / an internal error.
  bool is_int_imm() const;
  int64_t int_value() const;
  // Operand i (0-based) of a compound node.
  const Expr& operand(int i) const;

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind = ExprKind::kIntImm;
  int64_t value = 0;             // kIntImm: the constant; kBoolImm: 0 or 1
  VarId var_id = 0;              // kVar only
  std::string name;              // kVar only
  std::array<Expr, 3> operands;  // the first kind_arity(kind) are defined
  size_t hash = 0;               // structural hash, computed once when the node is made
};

// A variable: an Expr of kind kVar with a fresh id. Converts implicitly to Expr.
class Var {
 public:
  explicit Var(std::string name);
  // Views an existing kVar expression as a Var (internal error if it is not one).
  explicit Var(Expr expr);

  VarId id() const { return expr_->var_id; }
  const std::string& name() const { return expr_->name; }
  const Expr& expr() const { return expr_; }
  operator const Expr&() const { return expr_; }  // NOLINT(google-explicit-constructor)

 private:
  Expr expr_;
};

// ---- make(): the only way nodes are created; each checks its invariants (operands defined,
// integer/boolean operand types) with DYNVM_INTERNAL_CHECK. ----
Expr make_int(int64_t value);
Expr make_bool(bool value);
// kind is any two-operand kind: arithmetic, comparison, kAnd, kOr.
Expr make_binary(ExprKind kind, Expr a, Expr b);
Expr make_select(Expr cond, Expr true_value, Expr false_value);
Expr make_not(Expr a);

// ---- Builders (no simplification). ----
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);  // 0 - a
Expr floordiv(const Expr& a, const Expr& b);
Expr floormod(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr select(const Expr& cond, const Expr& true_value, const Expr& false_value);
// Comparisons and logic are named functions rather than operators so that `a == b` on Exprs
// never silently means "build a node" where identity or structural equality was meant.
Expr eq(const Expr& a, const Expr& b);
Expr ne(const Expr& a, const Expr& b);
Expr lt(const Expr& a, const Expr& b);
Expr le(const Expr& a, const Expr& b);
Expr gt(const Expr& a, const Expr& b);
Expr ge(const Expr& a, const Expr& b);
Expr logical_and(const Expr& a, const Expr& b);
Expr logical_or(const Expr& a, const Expr& b);
Expr logical_not(const Expr& a);

// ---- Structural identity: same shape, same constants, same variables (by id). ----
bool structural_equal(const Expr& a, const Expr& b);
size_t structural_hash(const Expr& e);
// A deterministic total order consistent with structural_equal: kind first, then constants,
// variable ids (creation order), then operands left to right. Orders atoms in the canonical
// form and the operands of commutative min/max/&&/||.
int structural_compare(const Expr& a, const Expr& b);

// Whether `e` mentions the variable `id` anywhere.
bool uses_var(const Expr& e, VarId id);

}  // namespace dynvm::arith
