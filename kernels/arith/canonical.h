// The canonical (polynomial) form of an integer expression:
//     c0 + sum_i ci * (a_i1 * a_i2 * ...)
// where each a is an *atom*: a variable, or a non-polynomial sub-expression (floordiv,
// floormod, min, max, select) whose operands are themselves already simplified. Atoms inside
// a monomial are sorted by structural_compare (repeats are powers), monomials are sorted, and
// zero coefficients are dropped, so two expressions that are equal as polynomials over their
// atoms have identical Polys and print identically.
//
// Arithmetic is exact or it refuses: an int64 overflow in a coefficient, or a product that
// would grow past kMaxTerms monomials, throws PolyOverflow so that the caller keeps that node
// unexpanded instead of producing a wrong (or huge) result.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <vector>

#include "kernels/arith/expr.h"

namespace dynvm::arith {

// Thrown by Poly arithmetic that cannot be done exactly; callers catch it right at the node
// being simplified and keep that node as written. Never escapes the library.
class PolyOverflow : public std::exception {
 public:
  const char* what() const noexcept override { return "polynomial overflow"; }
};

// The value, or PolyOverflow when an exact int64 operation did not fit.
inline int64_t fit_or_throw(std::optional<int64_t> v) {
  if (!v) throw PolyOverflow();
  return *v;
}

struct Monomial {
  std::vector<Expr> atoms;  // sorted by structural_compare; never empty inside a Term
};

// Total order on monomials: lexicographic over atoms, a proper prefix first.
int compare_monomials(const Monomial& a, const Monomial& b);

struct Term {
  Monomial monomial;
  int64_t coeff;  // never 0
};

class Poly {
 public:
  // Past this many monomials a product is left unexpanded: (a+b)*(c+d)*... grows
  // exponentially and helps neither reading nor proving.
  static constexpr size_t kMaxTerms = 64;

  Poly() = default;
  static Poly constant(int64_t c);
  static Poly atom(Expr atom);

  int64_t constant_term() const { return constant_; }
  const std::vector<Term>& terms() const { return terms_; }
  bool is_constant() const { return terms_.empty(); }
  // If this is exactly 1 * atom (no constant), the atom; else an undefined Expr.
  Expr single_atom() const;

  // Builds from already-sorted, zero-free terms (checked).
  static Poly from_terms(int64_t constant, std::vector<Term> terms);

 private:
  int64_t constant_ = 0;
  std::vector<Term> terms_;
};

Poly add(const Poly& a, const Poly& b);
Poly sub(const Poly& a, const Poly& b);
Poly neg(const Poly& a);
Poly mul(const Poly& a, const Poly& b);
Poly scale(const Poly& a, int64_t factor);
Poly add_constant(const Poly& a, int64_t c);
bool poly_equal(const Poly& a, const Poly& b);

// gcd of all non-constant coefficients (0 when there are none).
int64_t term_gcd(const Poly& p);

// A readable expression for the polynomial: positive terms first, then subtracted negative
// ones, the constant last (`w*2 - h + 1`), or first when every term is negative (`16 - i`).
// Coefficients follow their monomial (`n*16`).
Expr to_expr(const Poly& p);

// The polynomial form of an expression whose non-polynomial parts are already simplified:
// +, -, * are expanded, every other integer node becomes an atom as it is. Throws
// PolyOverflow like the arithmetic above.
Poly linear_form(const Expr& e);

}  // namespace dynvm::arith
