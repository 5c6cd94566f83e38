// Polynomial arithmetic over atoms for the canonical form (see canonical.h).
#include "kernels/arith/canonical.h"

#include <algorithm>
#include <map>
#include <utility>

#include "kernels/arith/int_math.h"
#include "vm/error.h"

namespace dynvm::arith {
namespace {

struct MonomialLess {
  bool operator()(const Monomial& a, const Monomial& b) const {
    return compare_monomials(a, b) < 0;
  }
};

Monomial multiply_monomials(const Monomial& a, const Monomial& b) {
  Monomial out;
  out.atoms.reserve(a.atoms.size() + b.atoms.size());
  std::merge(a.atoms.begin(), a.atoms.end(), b.atoms.begin(), b.atoms.end(),
             std::back_inserter(out.atoms),
             [](const Expr& x, const Expr& y) { return structural_compare(x, y) < 0; });
  return out;
}

Expr monomial_expr(const Monomial& m) {
  Expr product = m.atoms.front();
  for (size_t i = 1; i < m.atoms.size(); ++i) product = product * m.atoms[i];
  return product;
}

Expr term_expr(const Monomial& m, int64_t magnitude) {
  Expr product = monomial_expr(m);
  return magnitude == 1 ? product : product * make_int(magnitude);
}

}  // namespace

int compare_monomials(const Monomial& a, const Monomial& b) {
  size_t n = std::min(a.atoms.size(), b.atoms.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = structural_compare(a.atoms[i], b.atoms[i])) return c;
  }
  if (a.atoms.size() == b.atoms.size()) return 0;
  return a.atoms.size() < b.atoms.size() ? -1 : 1;
}

Poly Poly::constant(int64_t c) {
  Poly p;
  p.constant_ = c;
  return p;
}

Poly Poly::atom(Expr atom) {
  DYNVM_INTERNAL_CHECK(atom.defined() && !atom.is_boolean(), "a Poly atom must be an integer");
  if (atom.is_int_imm()) return constant(atom.int_value());
  Poly p;
  p.terms_.push_back(Term{Monomial{{std::move(atom)}}, 1});
  return p;
}

Poly Poly::from_terms(int64_t constant, std::vector<Term> terms) {
  for (size_t i = 0; i < terms.size(); ++i) {
    DYNVM_INTERNAL_CHECK(terms[i].coeff != 0 && !terms[i].monomial.atoms.empty(), "malformed term");
    DYNVM_INTERNAL_CHECK(i == 0 || compare_monomials(terms[i - 1].monomial, terms[i].monomial) < 0,
                         "terms out of order");
  }
  Poly p;
  p.constant_ = constant;
  p.terms_ = std::move(terms);
  return p;
}

Expr Poly::single_atom() const {
  if (constant_ != 0 || terms_.size() != 1 || terms_[0].coeff != 1 ||
      terms_[0].monomial.atoms.size() != 1) {
    return Expr();
  }
  return terms_[0].monomial.atoms[0];
}

Poly add(const Poly& a, const Poly& b) {
  std::vector<Term> out;
  out.reserve(a.terms().size() + b.terms().size());
  size_t i = 0, j = 0;
  while (i < a.terms().size() || j < b.terms().size()) {
    int c = i == a.terms().size() ? 1
            : j == b.terms().size()
                ? -1
                : compare_monomials(a.terms()[i].monomial, b.terms()[j].monomial);
    if (c < 0) {
      out.push_back(a.terms()[i++]);
    } else if (c > 0) {
      out.push_back(b.terms()[j++]);
    } else {
      int64_t coeff = fit_or_throw(checked_add(a.terms()[i].coeff, b.terms()[j].coeff));
      if (coeff != 0) out.push_back(Term{a.terms()[i].monomial, coeff});
      ++i;
      ++j;
    }
  }
  if (out.size() > Poly::kMaxTerms) throw PolyOverflow();
  return Poly::from_terms(fit_or_throw(checked_add(a.constant_term(), b.constant_term())),
                          std::move(out));
}

Poly scale(const Poly& a, int64_t factor) {
  if (factor == 0) return Poly::constant(0);
  std::vector<Term> out;
  out.reserve(a.terms().size());
  for (const Term& t : a.terms()) {
    out.push_back(Term{t.monomial, fit_or_throw(checked_mul(t.coeff, factor))});
  }
  return Poly::from_terms(fit_or_throw(checked_mul(a.constant_term(), factor)), std::move(out));
}

Poly neg(const Poly& a) { return scale(a, -1); }

Poly sub(const Poly& a, const Poly& b) { return add(a, neg(b)); }

Poly add_constant(const Poly& a, int64_t c) { return add(a, Poly::constant(c)); }

Poly mul(const Poly& a, const Poly& b) {
  if (a.is_constant()) return scale(b, a.constant_term());
  if (b.is_constant()) return scale(a, b.constant_term());
  // (ca + sum a_i) * (cb + sum b_j): cross terms go through a map to merge equal monomials.
  std::map<Monomial, int64_t, MonomialLess> acc;
  auto accumulate = [&](const Monomial& m, int64_t coeff) {
    int64_t& slot = acc[m];
    slot = fit_or_throw(checked_add(slot, coeff));
  };
  for (const Term& ta : a.terms()) {
    for (const Term& tb : b.terms()) {
      accumulate(multiply_monomials(ta.monomial, tb.monomial),
                 fit_or_throw(checked_mul(ta.coeff, tb.coeff)));
    }
    if (b.constant_term() != 0) {
      accumulate(ta.monomial, fit_or_throw(checked_mul(ta.coeff, b.constant_term())));
    }
  }
  if (a.constant_term() != 0) {
    for (const Term& tb : b.terms()) {
      accumulate(tb.monomial, fit_or_throw(checked_mul(tb.coeff, a.constant_term())));
    }
  }
  std::vector<Term> out;
  for (auto& [m, coeff] : acc) {
    if (coeff != 0) out.push_back(Term{m, coeff});
  }
  if (out.size() > Poly::kMaxTerms) throw PolyOverflow();
  return Poly::from_terms(fit_or_throw(checked_mul(a.constant_term(), b.constant_term())),
                          std::move(out));
}

bool poly_equal(const Poly& a, const Poly& b) {
  if (a.constant_term() != b.constant_term() || a.terms().size() != b.terms().size()) {
    return false;
  }
  for (size_t i = 0; i < a.terms().size(); ++i) {
    if (a.terms()[i].coeff != b.terms()[i].coeff ||
        compare_monomials(a.terms()[i].monomial, b.terms()[i].monomial) != 0) {
      return false;
    }
  }
  return true;
}

int64_t term_gcd(const Poly& p) {
  int64_t g = 0;
  for (const Term& t : p.terms()) g = fit_or_throw(checked_gcd(g, t.coeff));
  return g;
}

Expr to_expr(const Poly& p) {
  Expr result;
  // Positive terms add up first, so the common case reads `a + b*2 - c + 1`.
  for (const Term& t : p.terms()) {
    if (t.coeff <= 0) continue;
    Expr term = term_expr(t.monomial, t.coeff);
    result = result.defined() ? result + term : term;
  }
  int64_t c = p.constant_term();
  bool constant_done = false;
  if (!result.defined() && c != 0) {
    result = make_int(c);  // every term is negative: `16 - i`
    constant_done = true;
  }
  for (const Term& t : p.terms()) {
    if (t.coeff >= 0) continue;
    if (!result.defined()) {
      result = term_expr(t.monomial, t.coeff);  // `x*-1` when nothing else is there
    } else if (t.coeff == kNegInf) {
      result = result + term_expr(t.monomial, t.coeff);  // -coeff does not fit
    } else {
      result = result - term_expr(t.monomial, -t.coeff);
    }
  }
  if (!result.defined()) return make_int(c);
  if (!constant_done && c != 0) {
    result = c > 0 || c == kNegInf ? result + make_int(c) : result - make_int(-c);
  }
  return result;
}

Poly linear_form(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return Poly::constant(e.int_value());
    case ExprKind::kAdd:
      return add(linear_form(e.operand(0)), linear_form(e.operand(1)));
    case ExprKind::kSub:
      return sub(linear_form(e.operand(0)), linear_form(e.operand(1)));
    case ExprKind::kMul:
      return mul(linear_form(e.operand(0)), linear_form(e.operand(1)));
    default:
      return Poly::atom(e);
  }
}

}  // namespace dynvm::arith
