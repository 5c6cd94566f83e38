// The Analyzer's answers: constant bounds (interval analysis with saturation at the
// infinities), modular sets and divisibility, and proofs (provably_equal, can_prove).
#include "kernels/arith/analyzer.h"

#include <gtest/gtest.h>

#include <string>

#include "kernels/arith/parser.h"
#include "kernels/arith/printer.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

class ArithAnalyzer : public ::testing::Test {
 protected:
  ArithAnalyzer() {
    for (const char* name : {"a", "b", "i", "m", "n", "w", "x", "y"}) scope_.get(name);
  }

  Var var(const char* name) { return scope_.get(name); }
  Expr parse(const std::string& text) { return parse_expr(text, scope_); }
  Bounds bounds(const std::string& text) { return analyzer_.const_bounds(parse(text)); }
  ModularSet modular(const std::string& text) { return analyzer_.modular_set(parse(text)); }
  bool divisible(const std::string& text, int64_t k) {
    return analyzer_.provably_divisible(parse(text), k);
  }
  bool proves(const std::string& text) { return analyzer_.can_prove(parse(text)); }
  bool equal(const std::string& a, const std::string& b) {
    return analyzer_.provably_equal(parse(a), parse(b));
  }

  VarScope scope_;
  Analyzer analyzer_;
};

void expect_bounds(const Bounds& b, int64_t min, int64_t max) {
  EXPECT_EQ(b.min, min);
  EXPECT_EQ(b.max, max);
}

void expect_modular(const ModularSet& m, int64_t coeff, int64_t base) {
  EXPECT_EQ(m.coeff, coeff);
  EXPECT_EQ(m.base, base);
}

TEST_F(ArithAnalyzer, BoundsOfArithmetic) {
  analyzer_.bind(var("x"), -3, 5);
  analyzer_.bind(var("y"), 2, 4);
  expect_bounds(bounds("x + y"), -1, 9);
  expect_bounds(bounds("x - y"), -7, 3);
  expect_bounds(bounds("x*y"), -12, 20);
  expect_bounds(bounds("x*x"), 0, 25);
  expect_bounds(bounds("x*-2"), -10, 6);
  expect_bounds(bounds("x // 2"), -2, 2);
  expect_bounds(bounds("x // -2"), -3, 1);
  expect_bounds(bounds("x % 4"), 0, 3);
  expect_bounds(bounds("(x + 3) % 16"), 0, 8);
  expect_bounds(bounds("x // y"), -2, 2);
  expect_bounds(bounds("x % y"), 0, 3);
  expect_bounds(bounds("min(x, y)"), -3, 4);
  expect_bounds(bounds("max(x, y)"), 2, 5);
  expect_bounds(bounds("select(x < 0, y, 10)"), 2, 10);
  expect_bounds(bounds("select(y < 10, x, 100)"), -3, 5);
  expect_bounds(bounds("x < 6"), 1, 1);
  expect_bounds(bounds("x < 0"), 0, 1);
}

TEST_F(ArithAnalyzer, BoundsWithInfinitiesSaturate) {
  analyzer_.bind(var("n"), 1, kPosInf);
  analyzer_.bind(var("x"), -3, 5);
  expect_bounds(bounds("n*16"), 16, kPosInf);
  expect_bounds(bounds("0 - n"), kNegInf, -1);
  expect_bounds(bounds("x // n"), -3, 5);
  expect_bounds(bounds("x % n"), 0, kPosInf);
  expect_bounds(bounds("n*n*n*n*n"), 1, kPosInf);
  expect_bounds(bounds("y"), kNegInf, kPosInf);
  expect_bounds(bounds("y*0"), 0, 0);
  analyzer_.bind(var("m"), 1LL << 40, 1LL << 40);
  // 2^80 does not fit: saturated, and the lower end kept finite so no later rule can
  // mistake it for an infinity.
  expect_bounds(bounds("m*m"), kPosInf - 1, kPosInf);
  expect_bounds(bounds("-9223372036854775808 // -4"), (kPosInf - 1) / 4, kPosInf);  // holds 2^61
}

TEST_F(ArithAnalyzer, BoundsAreTightenedBySimplifying) {
  analyzer_.bind(var("x"), -3, 5);
  expect_bounds(bounds("(x + y) - y"), -3, 5);
  expect_bounds(bounds("(n*16) // 16 - n"), 0, 0);
  expect_bounds(bounds("(x*8 + 3) % 8"), 3, 3);
}

TEST_F(ArithAnalyzer, ModularSetsTrackMultiplesAndResidues) {
  expect_modular(modular("n*16"), 16, 0);
  expect_modular(modular("n*16 + 3"), 16, 3);
  expect_modular(modular("n*16 - 3"), 16, 13);
  expect_modular(modular("x*6 + y*4"), 2, 0);
  expect_modular(modular("(n*16) // 4"), 4, 0);
  expect_modular(modular("(n*16 + 5) % 8"), 0, 5);
  expect_modular(modular("(n*12 + 5) % 8"), 4, 1);
  expect_modular(modular("(n*8 + 2)*(m*4 + 1)"), 8, 2);
  expect_modular(modular("select(x < 0, n*8 + 1, m*4 + 1)"), 4, 1);
  expect_modular(modular("min(n*6, m*9)"), 3, 0);
  expect_modular(modular("7"), 0, 7);
  expect_modular(modular("x"), 1, 0);
  EXPECT_TRUE(ModularSet({16, 3}).holds_for(-13));
  EXPECT_FALSE(ModularSet({16, 3}).holds_for(4));
  EXPECT_TRUE(ModularSet({192, 64}).holds_for(kNegInf));  // no overflow in the check itself
}

TEST_F(ArithAnalyzer, DivisibilityDecidesWhetherASplitNeedsATail) {
  EXPECT_TRUE(divisible("n*16", 16));
  EXPECT_TRUE(divisible("n*16", 8));
  EXPECT_FALSE(divisible("n*16", 32));
  EXPECT_FALSE(divisible("n*16 + 3", 16));
  EXPECT_TRUE(divisible("n*16 + m*32 + 48", 16));
  EXPECT_TRUE(divisible("(n*16) // 4", 4));
  EXPECT_FALSE(divisible("(n*16) // 4", 8));
  EXPECT_TRUE(divisible("((w + 15) // 16)*16", 16));
  EXPECT_TRUE(divisible("n - n % 8", 8));
  EXPECT_TRUE(divisible("0", 7));
  EXPECT_FALSE(divisible("n", 2));
  EXPECT_TRUE(provably_divisible(var("n") * 16, 16));
  EXPECT_THROW(analyzer_.provably_divisible(var("n"), 0), InternalError);
}

TEST_F(ArithAnalyzer, ProvesEqualities) {
  EXPECT_TRUE(equal("(a + b)*(a - b)", "a*a - b*b"));
  EXPECT_TRUE(equal("(w - 1) // 8 + 1", "(w + 7) // 8"));
  EXPECT_TRUE(equal("(n*16) // 16", "n"));
  EXPECT_TRUE(equal("(x // 8)*8 + x % 8", "x"));
  EXPECT_FALSE(equal("x", "y"));
  EXPECT_FALSE(equal("x // 2 * 2", "x"));
  EXPECT_FALSE(equal("min(x, 16)", "x"));
  analyzer_.bind(var("x"), 0, 16);
  EXPECT_TRUE(equal("min(x, 16)", "x"));
  EXPECT_TRUE(provably_equal(var("a") * 2, var("a") + var("a")));
}

TEST_F(ArithAnalyzer, ProvesConditionsFromRanges) {
  analyzer_.bind(var("n"), 1, kPosInf);
  analyzer_.bind(var("i"), make_int(0), var("n") - 1);
  EXPECT_TRUE(proves("i < n"));
  EXPECT_TRUE(proves("i + 1 <= n"));
  EXPECT_TRUE(proves("!(i >= n)"));
  EXPECT_TRUE(proves("0 <= i && i < n"));
  EXPECT_TRUE(proves("n*16 >= 16"));
  EXPECT_TRUE(proves("((n + 15) // 16)*16 >= n"));
  EXPECT_TRUE(proves("((n + 15) // 16)*16 < n + 16"));
  EXPECT_TRUE(proves("i*2 < n*2"));
  EXPECT_FALSE(proves("i < n - 1"));
  EXPECT_FALSE(proves("n < 10"));
  EXPECT_FALSE(proves("x < y"));
  expect_bounds(bounds("i"), 0, kPosInf);
}

TEST_F(ArithAnalyzer, SymbolicRangesDeriveConstantBounds) {
  analyzer_.bind(var("n"), 1, 64);
  analyzer_.bind(var("i"), make_int(0), var("n") - 1);
  expect_bounds(bounds("i"), 0, 63);
  expect_bounds(bounds("i // 64"), 0, 0);
  analyzer_.unbind(var("i"));
  expect_bounds(bounds("i"), kNegInf, kPosInf);
}

TEST_F(ArithAnalyzer, ConstantRangesPinVariables) {
  analyzer_.bind(var("n"), 8, 8);
  EXPECT_EQ(to_string(analyzer_.simplify(parse("n*2 + x"))), "x + 16");
  expect_modular(modular("n*3"), 0, 24);
}

TEST_F(ArithAnalyzer, RejectsEmptyAndSelfReferentialRanges) {
  EXPECT_THROW(analyzer_.bind(var("x"), 5, 4), UserError);
  EXPECT_THROW(analyzer_.bind(var("x"), kPosInf, kPosInf), UserError);
  EXPECT_THROW(analyzer_.bind(var("x"), make_int(0), var("x") + 1), UserError);
  analyzer_.bind(var("n"), 1, 4);
  EXPECT_THROW(analyzer_.bind(var("x"), var("n") + 10, var("n")), UserError);
}

}  // namespace
}  // namespace dynvm::arith
