// The simplifier's rules, one test per rule: each parses an expression, simplifies it with
// the ranges given, and compares the printed canonical form with the expected one.
#include "kernels/arith/simplify.h"

#include <gtest/gtest.h>

#include <string>

#include "kernels/arith/analyzer.h"
#include "kernels/arith/evaluate.h"
#include "kernels/arith/parser.h"
#include "kernels/arith/printer.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

class ArithSimplify : public ::testing::Test {
 protected:
  ArithSimplify() {
    // Created in a fixed order: the canonical form orders variables by creation.
    for (const char* name : {"a", "b", "c", "f", "i", "j", "m", "n", "w", "x", "y", "z"}) {
      scope_.get(name);
    }
  }

  Var var(const char* name) { return scope_.get(name); }
  Expr parse(const std::string& text) { return parse_expr(text, scope_); }
  std::string simplified(const std::string& text) {
    return to_string(analyzer_.simplify(parse(text)));
  }

  VarScope scope_;
  Analyzer analyzer_;
};

TEST_F(ArithSimplify, FoldsConstantsWithFloorSemantics) {
  EXPECT_EQ(simplified("-7 // 2"), "-4");
  EXPECT_EQ(simplified("-7 % 2"), "1");
  EXPECT_EQ(simplified("7 // -2"), "-4");
  EXPECT_EQ(simplified("7 % -2"), "-1");
  EXPECT_EQ(simplified("(3 + 4)*2 - 1"), "13");
  EXPECT_EQ(simplified("min(3, -2) + max(3, -2)*10"), "28");
  EXPECT_EQ(simplified("select(1 < 2, 5, 6)"), "5");
}

TEST_F(ArithSimplify, LeavesDivisionByZeroForEvaluationToReport) {
  EXPECT_EQ(simplified("x // 0"), "x floordiv 0");
  EXPECT_EQ(simplified("7 % (x - x)"), "7 floormod 0");
}

TEST_F(ArithSimplify, LeavesOverflowingArithmeticUnfolded) {
  // Folding would overflow int64: the node is kept as written, nothing throws.
  EXPECT_EQ(simplified("9223372036854775807 + 1"), "9223372036854775807 + 1");
  EXPECT_EQ(simplified("x*4611686018427387904*2"), "x*4611686018427387904*2");
  EXPECT_EQ(simplified("-9223372036854775808 // -1"), "-9223372036854775808 floordiv -1");
  EXPECT_EQ(simplified("(x + 9223372036854775807) - 1"), "x + 9223372036854775806");
  EXPECT_THROW(evaluate(analyzer_.simplify(parse("9223372036854775807 + 1")), {}), UserError);
}

TEST_F(ArithSimplify, CancelsAndCombinesLikeTerms) {
  EXPECT_EQ(simplified("x - x"), "0");
  EXPECT_EQ(simplified("(x + y) - (y + x)"), "0");
  EXPECT_EQ(simplified("2*x + 3*x"), "x*5");
  EXPECT_EQ(simplified("x*3 - (x + x + x) + y"), "y");
  EXPECT_EQ(simplified("1 - x + 2"), "3 - x");
  EXPECT_EQ(simplified("0 - x"), "x*-1");
  EXPECT_EQ(simplified("y - x*2 + 1"), "y - x*2 + 1");
}

TEST_F(ArithSimplify, DistributesProductsIntoSumsOfMonomials) {
  EXPECT_EQ(simplified("(a + b)*c"), "a*c + b*c");
  EXPECT_EQ(simplified("c*(b + a)"), "a*c + b*c");
  EXPECT_EQ(simplified("(x + 1)*(x - 1)"), "x*x - 1");
  EXPECT_EQ(simplified("(a + b)*(a - b)"), "a*a - b*b");
  EXPECT_EQ(simplified("(a + b)*(a - b)"), simplified("a*a - b*b"));
  EXPECT_EQ(simplified("2*(x*3 + 4)"), "x*6 + 8");
}

TEST_F(ArithSimplify, ScaledVariableDividesBackExactly) {
  EXPECT_EQ(simplified("(n*16) // 16"), "n");
  EXPECT_EQ(simplified("(n*16) % 16"), "0");
  EXPECT_EQ(simplified("(n*16) // 4"), "n*4");
  EXPECT_EQ(simplified("(n*16 + m*32) // 16"), "m*2 + n");
}

TEST_F(ArithSimplify, MultiplesLeaveTheDivisionWhateverTheSign) {
  EXPECT_EQ(simplified("(x*8 + 3) // 8"), "x");
  EXPECT_EQ(simplified("(x*8 + 3) % 8"), "3");
  EXPECT_EQ(simplified("(x*8 - 3) // 8"), "x - 1");
  EXPECT_EQ(simplified("(x*8 - 3) % 8"), "5");
  EXPECT_EQ(simplified("(x*8 + y) // 8"), "x + y floordiv 8");
  EXPECT_EQ(simplified("(x*8 + y) % 8"), "y floormod 8");
  EXPECT_EQ(simplified("(x*17) // 16"), "x + x floordiv 16");
}

TEST_F(ArithSimplify, NormalisesTheDividendsConstantIntoOnePeriod) {
  // (w - 1) floordiv 8 + 1 and (w + 7) floordiv 8 are one canonical form.
  EXPECT_EQ(simplified("(w - 1) // 8 + 1"), "(w + 7) floordiv 8");
  EXPECT_EQ(simplified("(w + 7) // 8"), "(w + 7) floordiv 8");
  EXPECT_EQ(simplified("(w + 17) % 8"), "(w + 1) floormod 8");
}

TEST_F(ArithSimplify, CancelsCommonFactorsOfDividendAndDivisor) {
  EXPECT_EQ(simplified("(x*4 + 2) // 8"), "(x*2 + 1) floordiv 4");
  EXPECT_EQ(simplified("(x*4 + 2) % 8"), "((x*2 + 1) floormod 4)*2");
  EXPECT_EQ(simplified("(x*6) // 4"), "x + x floordiv 2");
}

TEST_F(ArithSimplify, MakesDivisorsPositive) {
  EXPECT_EQ(simplified("x // -4"), "(x*-1) floordiv 4");
  EXPECT_EQ(simplified("x % -4"), "((x*-1) floormod 4)*-1");
  EXPECT_EQ(simplified("x // -1"), "x*-1");
  EXPECT_EQ(simplified("x % -1"), "0");
}

TEST_F(ArithSimplify, MergesNestedDivisionsAndRemainders) {
  EXPECT_EQ(simplified("x // 4 // 8"), "x floordiv 32");
  EXPECT_EQ(simplified("(x // 4 + 1) // 2"), "(x + 4) floordiv 8");
  EXPECT_EQ(simplified("x % 16 % 4"), "x floormod 4");
  EXPECT_EQ(simplified("(x % 16 + 1) % 4"), "(x + 1) floormod 4");
  EXPECT_EQ(simplified("x % 4 % 16"), "x floormod 4");  // by bounds: [0, 3] is one period
}

TEST_F(ArithSimplify, RecombinesQuotientAndRemainder) {
  // What a split or fused loop index leaves behind.
  EXPECT_EQ(simplified("(f // 8)*8 + f % 8"), "f");
  EXPECT_EQ(simplified("(f // 8)*16 + (f % 8)*2 + 1"), "f*2 + 1");
  EXPECT_EQ(simplified("((x*4 + 2) // 8)*8 + (x*4 + 2) % 8"), "x*4 + 2");
  EXPECT_EQ(simplified("(f // 8)*8 + f % 4"), "(f floordiv 8)*8 + f floormod 4");
  // Three axes fused into one index ([2, 24, 32] rows, each axis recovered from the fused f)
  // flattened again; the middle quotient nests, (f // 32) // 24 == f // 768.
  EXPECT_EQ(simplified("((f // 768)*24 + (f // 32) % 24)*32 + f % 32"), "f");
  EXPECT_EQ(simplified("(f // 768)*768 + ((f // 32) % 24)*32 + f % 32 + 5"), "f + 5");
  // A symbolic divisor: (row, column) of a flattened index over a symbolic width, and the
  // same inside a larger sum (a channel's plane plus the position in it).
  EXPECT_EQ(simplified("(f // w)*w + f % w"), "f");
  EXPECT_EQ(simplified("(c*n + f // w)*w + f % w"), "c*n*w + f");
  EXPECT_EQ(simplified("(f // w)*w*2 + (f % w)*2"), "f*2");
  EXPECT_EQ(simplified("(f // w)*n + f % w"), "n*(f floordiv w) + f floormod w");
  // Both scaled by a symbolic stride: a [.., h, 2, w, 2] buffer read at (y floordiv 2,
  // y floormod 2, x floordiv 2, x floormod 2) is the [.., 2h, 2w] one read at (y, x).
  EXPECT_EQ(simplified("((y // 2)*2 + y % 2)*w*2 + (x // 2)*2 + x % 2"), "w*y*2 + x");
  EXPECT_EQ(simplified("(y // 2)*w*2 + (y % 2)*w"), "w*y");
}

TEST_F(ArithSimplify, FoldsDivisionWhenBoundsFitOnePeriod) {
  analyzer_.bind(var("i"), 0, 15);
  EXPECT_EQ(simplified("i // 16"), "0");
  EXPECT_EQ(simplified("i % 16"), "i");
  EXPECT_EQ(simplified("(i + 16) // 16"), "1");
  EXPECT_EQ(simplified("(i + 32) % 16"), "i");
  EXPECT_EQ(simplified("(x*16 + i) // 16"), "x");
  EXPECT_EQ(simplified("(x*16 + i) % 16"), "i");
  EXPECT_EQ(simplified("i // 8"), "i floordiv 8");
}

TEST_F(ArithSimplify, FoldsMinAndMax) {
  EXPECT_EQ(simplified("min(n, n + 1)"), "n");
  EXPECT_EQ(simplified("max(n, n + 1)"), "n + 1");
  EXPECT_EQ(simplified("min(x, x)"), "x");
  EXPECT_EQ(simplified("min(y, x)"), "min(x, y)");
  EXPECT_EQ(simplified("min(x, y)"), "min(x, y)");
  EXPECT_EQ(simplified("min(min(x, y), x)"), "min(x, y)");
  EXPECT_EQ(simplified("min(x, min(3, y))"), "min(min(x, y), 3)");
  EXPECT_EQ(simplified("max(x + 2, max(x, y))"), "max(y, x + 2)");
  EXPECT_EQ(simplified("min(x, y) - min(y, x)"), "0");
}

TEST_F(ArithSimplify, FoldsMinAndMaxWithBounds) {
  analyzer_.bind(var("i"), 0, 16);
  EXPECT_EQ(simplified("min(i, 16)"), "i");
  EXPECT_EQ(simplified("max(i, 16)"), "16");
  EXPECT_EQ(simplified("max(i, 0)"), "i");
  EXPECT_EQ(simplified("min(i, 15)"), "min(i, 15)");
  EXPECT_EQ(simplified("min(i*2, i + 16)"), "i*2");
}

// Quotients by different divisors compared through a common multiple: a map downsampled
// twice by 2 (then by 8 in all) and upsampled by 2 is never smaller than the map
// downsampled twice, so cropping it to that size is the min's one side.
TEST_F(ArithSimplify, ComparesQuotientsOfDifferentDivisors) {
  analyzer_.bind(var("x"), 0, kPosInf);
  EXPECT_EQ(simplified("min(((x + 7) // 8)*2, (x + 3) // 4)"), "(x + 3) floordiv 4");
  EXPECT_EQ(simplified("max(((x + 3) // 4)*2, (x + 1) // 2)"), "((x + 3) floordiv 4)*2");
  EXPECT_EQ(simplified("(x + 1) // 2 <= ((x + 3) // 4)*2"), "true");
  EXPECT_EQ(simplified("min((x // 8)*2, (x + 3) // 4)"), "(x floordiv 8)*2");
  // Either side can be the smaller (x = 0 and x = 8): stays.
  EXPECT_EQ(simplified("min((x // 4)*4, (x + 1) // 2 + 1)"),
            "min((x + 1) floordiv 2 + 1, (x floordiv 4)*4)");
}

TEST_F(ArithSimplify, UsesSymbolicRanges) {
  analyzer_.bind(var("n"), 1, kPosInf);
  analyzer_.bind(var("i"), make_int(0), var("n") - 1);
  EXPECT_EQ(simplified("min(i, n - 1)"), "i");
  EXPECT_EQ(simplified("min(i + 1, n)"), "i + 1");
  EXPECT_EQ(simplified("max(i, n)"), "n");
  EXPECT_EQ(simplified("i // n"), "0");
  EXPECT_EQ(simplified("i % n"), "i");
  EXPECT_EQ(simplified("n // n"), "1");
  EXPECT_EQ(simplified("select(i < n, i, 0)"), "i");
  EXPECT_EQ(simplified("i < n - 1"), "i < n - 1");
}

TEST_F(ArithSimplify, FoldsSelectWithProvableConditions) {
  EXPECT_EQ(simplified("select(x < x + 1, a, b)"), "a");
  EXPECT_EQ(simplified("select(x*2 == 7, a, b)"), "b");
  EXPECT_EQ(simplified("select(x < y, a + 1, 1 + a)"), "a + 1");
  EXPECT_EQ(simplified("select(x > 3, y, z)"), "select(4 <= x, y, z)");
  analyzer_.bind(var("i"), 0, 15);
  EXPECT_EQ(simplified("select(i < 16, a, b)"), "a");
  EXPECT_EQ(simplified("select(i >= 16 || i < 0, a, b)"), "b");
  EXPECT_EQ(simplified("select(i < 8, a, b)"), "select(i < 8, a, b)");
}

TEST_F(ArithSimplify, WritesComparisonsInOneCanonicalShape) {
  EXPECT_EQ(simplified("x + 1 <= y"), "x < y");
  EXPECT_EQ(simplified("x <= y"), "x <= y");
  EXPECT_EQ(simplified("y >= x"), "x <= y");
  EXPECT_EQ(simplified("2*x < 2*y"), "x < y");
  EXPECT_EQ(simplified("x*2 < 7"), "x < 4");
  EXPECT_EQ(simplified("0 < n"), "0 < n");
  EXPECT_EQ(simplified("n > 0"), "0 < n");
  EXPECT_EQ(simplified("!(x < y)"), "y <= x");
  EXPECT_EQ(simplified("x == y"), simplified("y == x"));
  EXPECT_EQ(simplified("x*2 == y*2 + 4"), "x == y + 2");
  EXPECT_EQ(simplified("x*2 == 7"), "false");
  EXPECT_EQ(simplified("x*2 != 7"), "true");
  EXPECT_EQ(simplified("!(x == y)"), "x != y");
  EXPECT_EQ(simplified("x*x >= 0"), "true");
}

TEST_F(ArithSimplify, SimplifiesLogic) {
  EXPECT_EQ(simplified("x < y && x < y"), "x < y");
  EXPECT_EQ(simplified("x < y && !(x < y)"), "false");
  EXPECT_EQ(simplified("x < y || y <= x"), "true");
  EXPECT_EQ(simplified("x < 3 && x < 5"), "x < 3");
  EXPECT_EQ(simplified("x < 3 || x < 5"), "x < 5");
  EXPECT_EQ(simplified("true && x < y"), "x < y");
  EXPECT_EQ(simplified("false || x < y"), "x < y");
  EXPECT_EQ(simplified("x < y && false"), "false");
  EXPECT_EQ(simplified("!(x < y && y < z)"), "y <= x || z <= y");
  EXPECT_EQ(simplified("!!(x < y)"), "x < y");
  EXPECT_EQ(simplified("z < y && x < y"), simplified("x < y && z < y"));
}

TEST_F(ArithSimplify, IsIdempotent) {
  const char* texts[] = {"(a + b)*(a - b) + (f // 8)*8", "min(x, max(y, 3)) // 4 % 3",
                         "select(x < y && y < 8, x*2, y) - 1", "(w - 1) // 8 + 1 - w % 8"};
  for (const char* text : texts) {
    Expr once = analyzer_.simplify(parse(text));
    EXPECT_TRUE(structural_equal(analyzer_.simplify(once), once)) << text << " -> " << once;
  }
}

}  // namespace
}  // namespace dynvm::arith

namespace dynvm::arith {
namespace {

// Dims that type inference composes through broadcasts and reshapes share their operands:
// select(d == 1, e, d) over d, e built the same way, 40 levels deep, is a small DAG whose
// tree has 2^40 leaves. Simplifying it must take time in the DAG's size, not the tree's.
TEST(ArithSimplifyShared, NestedSelectsOverSharedOperandsSimplifyInLinearTime) {
  Var n("n"), m("m");
  Analyzer an;
  an.bind(n, 0, kPosInf);
  an.bind(m, 0, kPosInf);
  Expr d = Expr(n) + 1, e = Expr(m) * 2 + 3;
  for (int k = 0; k < 40; ++k) {
    Expr next_d = select(eq(d, 1), e, d);
    e = select(eq(e, 1), d, e) + 1;
    d = next_d;
  }
  Expr s = an.simplify(d + e);
  ASSERT_TRUE(s.defined());
  // At n = 5, m = 7 (ranges of one value; evaluate would walk the tree): n + 1 = 6 is never
  // 1, nor is m*2 + 3 + k, so d stays n + 1 and e grows by one per level.
  Analyzer at;
  at.bind(n, 5, 5);
  at.bind(m, 7, 7);
  EXPECT_EQ(to_string(at.simplify(s)), "63");
}

}  // namespace
}  // namespace dynvm::arith
