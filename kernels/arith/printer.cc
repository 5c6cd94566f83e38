// Precedence-driven printing: a child is parenthesised only when the parser would otherwise
// build a different tree, plus one readability exception: a product next to a division or
// remainder is parenthesised (`(n*16) floordiv 16`), and so is the operand of `!` unless it
// is a constant or another `!`, since `n*16 floordiv 16` and `!a < b` are easy to misread
// even though they parse as intended.
#include "kernels/arith/printer.h"

#include <sstream>

#include "vm/error.h"

namespace dynvm::arith {
namespace {

// Binding strength, loosest first; the parser (parser.cc) uses the same levels.
enum Precedence : int {
  kOrLevel = 1,
  kAndLevel = 2,
  kNotLevel = 3,
  kCompareLevel = 4,
  kAddLevel = 5,
  kMulLevel = 6,
  kAtomLevel = 7,
};

int precedence(ExprKind kind) {
  switch (kind) {
    case ExprKind::kOr:
      return kOrLevel;
    case ExprKind::kAnd:
      return kAndLevel;
    case ExprKind::kNot:
      return kNotLevel;
    case ExprKind::kAdd:
    case ExprKind::kSub:
      return kAddLevel;
    case ExprKind::kMul:
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod:
      return kMulLevel;
    default:
      return is_comparison_kind(kind) ? kCompareLevel : kAtomLevel;
  }
}

const char* infix(ExprKind kind) {
  switch (kind) {
    case ExprKind::kAdd:
      return " + ";
    case ExprKind::kSub:
      return " - ";
    case ExprKind::kMul:
      return "*";
    case ExprKind::kFloorDiv:
      return " floordiv ";
    case ExprKind::kFloorMod:
      return " floormod ";
    case ExprKind::kEq:
      return " == ";
    case ExprKind::kNe:
      return " != ";
    case ExprKind::kLt:
      return " < ";
    case ExprKind::kLe:
      return " <= ";
    case ExprKind::kGt:
      return " > ";
    case ExprKind::kGe:
      return " >= ";
    case ExprKind::kAnd:
      return " && ";
    case ExprKind::kOr:
      return " || ";
    default:
      return nullptr;
  }
}

void print(std::ostream& os, const Expr& e);

void print_child(std::ostream& os, const Expr& child, int min_level, ExprKind parent) {
  // Only a chain of products goes without parentheses among the multiplicative operators.
  bool mixed_mul = precedence(parent) == kMulLevel && precedence(child.kind()) == kMulLevel &&
                   !(parent == ExprKind::kMul && child.kind() == ExprKind::kMul);
  bool parens = precedence(child.kind()) < min_level || mixed_mul;
  if (parens) os << '(';
  print(os, child);
  if (parens) os << ')';
}

void print(std::ostream& os, const Expr& e) {
  DYNVM_INTERNAL_CHECK(e.defined(), "printing an undefined expression");
  ExprKind kind = e.kind();
  switch (kind) {
    case ExprKind::kIntImm:
      os << e->value;
      return;
    case ExprKind::kBoolImm:
      os << (e->value ? "true" : "false");
      return;
    case ExprKind::kVar:
      os << e->name;
      return;
    case ExprKind::kMin:
    case ExprKind::kMax:
      os << (kind == ExprKind::kMin ? "min(" : "max(");
      print_child(os, e.operand(0), 0, kind);
      os << ", ";
      print_child(os, e.operand(1), 0, kind);
      os << ')';
      return;
    case ExprKind::kSelect:
      os << "select(";
      print_child(os, e.operand(0), 0, kind);
      os << ", ";
      print_child(os, e.operand(1), 0, kind);
      os << ", ";
      print_child(os, e.operand(2), 0, kind);
      os << ')';
      return;
    case ExprKind::kNot:
      // `!` binds looser than comparisons (as in the parser), but `!a < b` would read as
      // (!a) < b to a C programmer: always parenthesise a comparison or logic operand.
      os << '!';
      print_child(os, e.operand(0), e.operand(0).kind() == ExprKind::kNot ? kNotLevel : kAtomLevel,
                  kind);
      return;
    default:
      break;
  }
  int level = precedence(kind);
  // Binary operators associate to the left, so a right operand at the same level needs
  // parentheses; comparisons do not chain, so both sides must bind tighter.
  int left_level = level == kCompareLevel ? level + 1 : level;
  print_child(os, e.operand(0), left_level, kind);
  os << infix(kind);
  print_child(os, e.operand(1), level + 1, kind);
}

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  if (!e.defined()) return os << "<undefined>";
  print(os, e);
  return os;
}

}  // namespace dynvm::arith
