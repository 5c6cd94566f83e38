// Expressions themselves: identity of variables, structural equality and hashing, make()'s
// invariant checks, the printer and parser (round trip and errors) and reference evaluation
// with floor semantics.
#include "kernels/arith/expr.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "kernels/arith/evaluate.h"
#include "kernels/arith/parser.h"
#include "kernels/arith/printer.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

TEST(ArithExpr, VariablesAreIdentifiedByIdNotByName) {
  Var a("n"), b("n");
  EXPECT_NE(a.id(), b.id());
  EXPECT_TRUE(structural_equal(a, a));
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_FALSE(structural_equal(a + 1, b + 1));
  EXPECT_EQ(a.name(), "n");
  EXPECT_EQ(Var(a.expr()).id(), a.id());
}

TEST(ArithExpr, StructurallyEqualTreesHashAlike) {
  Var x("x"), y("y");
  Expr e1 = floordiv(x * 16 + y, 8);
  Expr e2 = floordiv(x * 16 + y, 8);
  EXPECT_NE(e1.get(), e2.get());
  EXPECT_TRUE(structural_equal(e1, e2));
  EXPECT_EQ(structural_hash(e1), structural_hash(e2));
  EXPECT_EQ(structural_compare(e1, e2), 0);
  EXPECT_FALSE(structural_equal(e1, floordiv(x * 16 + y, 4)));
  EXPECT_FALSE(structural_equal(e1, floormod(x * 16 + y, 8)));
  EXPECT_FALSE(structural_equal(x + y, y + x));  // structure, not algebra
}

TEST(ArithExpr, StructuralCompareIsAConsistentTotalOrder) {
  Var x("x"), y("y");
  Expr items[] = {make_int(3), make_int(-1), x, y, x + y, x * y, min(x, y), eq(x, y)};
  for (const Expr& a : items) {
    for (const Expr& b : items) {
      int ab = structural_compare(a, b), ba = structural_compare(b, a);
      EXPECT_EQ(ab, -ba) << to_string(a) << " vs " << to_string(b);
      EXPECT_EQ(ab == 0, structural_equal(a, b));
    }
  }
  EXPECT_LT(structural_compare(x, y), 0);  // vars order by creation
  EXPECT_LT(structural_compare(make_int(-1), make_int(3)), 0);
}

TEST(ArithExpr, MakeRejectsUndefinedAndMistypedOperands) {
  Var x("x");
  EXPECT_THROW(make_binary(ExprKind::kAdd, Expr(), x), InternalError);
  EXPECT_THROW(x + lt(x, 1), InternalError);
  EXPECT_THROW(logical_and(x, lt(x, 1)), InternalError);
  EXPECT_THROW(select(x, 1, 2), InternalError);
  EXPECT_THROW(make_not(x), InternalError);
  EXPECT_THROW(make_binary(ExprKind::kNot, x, x), InternalError);
  EXPECT_TRUE(lt(x, 1).is_boolean());
  EXPECT_FALSE(select(lt(x, 1), x, 2).is_boolean());
}

TEST(ArithPrinter, UsesTheFewestParenthesesThatKeepTheTree) {
  Var w("w"), n("n"), a("a"), b("b"), c("c");
  EXPECT_EQ(to_string(floordiv(w - 1, 8) + 1), "(w - 1) floordiv 8 + 1");
  EXPECT_EQ(to_string(floordiv(n * 16, 16)), "(n*16) floordiv 16");
  EXPECT_EQ(to_string(floordiv(n, 16) * 16), "(n floordiv 16)*16");
  EXPECT_EQ(to_string(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(to_string((a - b) - c), "a - b - c");
  EXPECT_EQ(to_string(a * (b + c)), "a*(b + c)");
  EXPECT_EQ(to_string(a * make_int(-1)), "a*-1");
  EXPECT_EQ(to_string(min(a, b + 1)), "min(a, b + 1)");
  EXPECT_EQ(to_string(select(lt(a, b), a, max(b, 0))), "select(a < b, a, max(b, 0))");
  EXPECT_EQ(to_string(logical_or(logical_not(lt(a, b)), logical_and(eq(a, b), ne(c, 0)))),
            "!(a < b) || a == b && c != 0");
  EXPECT_EQ(to_string(logical_and(logical_or(eq(a, b), make_bool(true)), ge(c, a))),
            "(a == b || true) && c >= a");
}

TEST(ArithParser, ReadsBackWhatThePrinterWrites) {
  const char* texts[] = {
      "(w - 1) floordiv 8 + 1",
      "(n*16) floordiv 16",
      "a - (b - c)*-3 + -9223372036854775808",
      "x floormod 8 - (x floordiv 8)*8",
      "min(max(a, b), select(a <= b && !(c > 2) || false, a, 0 - b))",
      "a != b",
      "!!(a >= b)",
  };
  for (const char* text : texts) {
    VarScope scope;
    Expr e = parse_expr(text, scope);
    EXPECT_EQ(to_string(e), text);
    EXPECT_TRUE(structural_equal(parse_expr(to_string(e), scope), e)) << text;
  }
}

TEST(ArithParser, AcceptsSymbolsAndWordsForDivision) {
  VarScope scope;
  EXPECT_TRUE(structural_equal(parse_expr("x // 8 + x % 8", scope),
                               parse_expr("x floordiv 8 + x floormod 8", scope)));
  // One scope: the same name is the same variable.
  Expr x = parse_expr("x", scope);
  ASSERT_NE(scope.find("x"), nullptr);
  EXPECT_EQ(Var(x).id(), scope.find("x")->id());
  // Precedence: * binds tighter than +, comparisons than &&, && than ||.
  EXPECT_EQ(to_string(parse_expr("1 + 2*x", scope)), "1 + 2*x");
  EXPECT_EQ(parse_expr("1 + 2*x", scope).kind(), ExprKind::kAdd);
  EXPECT_EQ(parse_expr("x < 1 || x > 2 && x == 3", scope).kind(), ExprKind::kOr);
  EXPECT_EQ(parse_expr("-x", scope).kind(), ExprKind::kSub);
  EXPECT_EQ(parse_expr("-5", scope).int_value(), -5);
}

TEST(ArithParser, ErrorsNameTheColumn) {
  auto error_of = [](const char* text) -> std::string {
    VarScope scope;
    try {
      parse_expr(text, scope);
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error_of("x + ").find("column 5"), std::string::npos) << error_of("x + ");
  EXPECT_NE(error_of("(x + 1").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("x $ 1").find("column 3: unexpected character '$'"), std::string::npos);
  EXPECT_NE(error_of("x && y").find("an integer cannot be an operand of '&&'"), std::string::npos);
  EXPECT_NE(error_of("(x < 1) + 2").find("a condition cannot be"), std::string::npos);
  EXPECT_NE(error_of("select(1, 2, 3)").find("the condition of select"), std::string::npos);
  EXPECT_NE(error_of("min(x < 1, 2)").find("an argument of min"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("9223372036854775808").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("a < b < c").find("unexpected '<'"), std::string::npos);
  EXPECT_NE(error_of("x = 1").find("unexpected character '='"), std::string::npos);
  EXPECT_NE(error_of("floordiv 2").find("expected an operand"), std::string::npos);
  EXPECT_NE(error_of("").find("column 1"), std::string::npos);
}

TEST(ArithEvaluate, UsesFloorSemanticsLikePython) {
  VarValues none;
  auto eval = [&](const char* text) {
    VarScope scope;
    return evaluate(parse_expr(text, scope), none);
  };
  EXPECT_EQ(eval("-7 // 2"), -4);
  EXPECT_EQ(eval("-7 % 2"), 1);
  EXPECT_EQ(eval("7 // -2"), -4);
  EXPECT_EQ(eval("7 % -2"), -1);
  EXPECT_EQ(eval("-7 // -2"), 3);
  EXPECT_EQ(eval("-7 % -2"), -1);
  EXPECT_EQ(eval("6 // 3"), 2);
  EXPECT_EQ(eval("-9223372036854775808 % -1"), 0);
  EXPECT_EQ(eval("min(3, -2) + max(3, -2)"), 1);
  EXPECT_EQ(eval("select(2 < 1, 10, 20)"), 20);
  EXPECT_EQ(eval("1 < 2 && !(3 == 3) || 2 != 2"), 0);
}

TEST(ArithEvaluate, ReportsDivisionByZeroOverflowAndMissingValues) {
  VarScope scope;
  Var x = scope.get("x");
  VarValues values{{x.id(), 0}};
  EXPECT_THROW(evaluate(parse_expr("7 // x", scope), values), UserError);
  EXPECT_THROW(evaluate(parse_expr("7 % x", scope), values), UserError);
  // Both branches are evaluated, as a branch-free select would.
  EXPECT_THROW(evaluate(parse_expr("select(x == 0, 0, 7 // x)", scope), values), UserError);
  EXPECT_THROW(evaluate(parse_expr("-9223372036854775808 // -1", scope), values), UserError);
  EXPECT_THROW(evaluate(parse_expr("9223372036854775807 + 1", scope), values), UserError);
  EXPECT_THROW(evaluate(parse_expr("x + y", scope), values), UserError);
  EXPECT_EQ(evaluate(parse_expr("x*5 - 3", scope), VarValues{{x.id(), 4}}), 17);
}

}  // namespace
}  // namespace dynvm::arith
