// The math library's function bodies: range reduction + polynomial + selects for special
// values, written once for f32 and f64 (the constants and polynomial degrees differ) and for
// any vector width. Polynomials are Taylor series or series of exactly known coefficients
// (1/k!, 2/(2k+1), 1/(2n+1)!!), truncated where the remainder is far below the type's
// rounding error on the reduced range, so no coefficient table has to be trusted blindly.
#include "kernels/codegen/math_ir.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <cmath>
#include <vector>

#include "vm/error.h"

namespace dynvm::codegen {
namespace {

using llvm::Value;

// Builds the body of one math function for one floating type (scalar or vector).
class MathBuilder {
 public:
  MathBuilder(llvm::IRBuilder<>& b, llvm::Type* type, MathLibrary& lib)
      : b_(b), type_(type), lib_(lib) {
    llvm::Type* elem = type->getScalarType();
    DYNVM_INTERNAL_CHECK(elem->isFloatTy() || elem->isDoubleTy(), "math on a non-float type");
    f64_ = elem->isDoubleTy();
    llvm::Type* ielem = b.getIntNTy(f64_ ? 64 : 32);
    if (auto* vt = llvm::dyn_cast<llvm::VectorType>(type)) {
      int_type_ = llvm::VectorType::get(ielem, vt->getElementCount());
    } else {
      int_type_ = ielem;
    }
  }

  bool f64() const { return f64_; }
  int mantissa_bits() const { return f64_ ? 52 : 23; }
  int exponent_bias() const { return f64_ ? 1023 : 127; }
  llvm::IRBuilder<>& b() { return b_; }

  Value* c(double v) { return llvm::ConstantFP::get(type_, v); }
  Value* ci(int64_t v) { return llvm::ConstantInt::get(int_type_, static_cast<uint64_t>(v), true); }
  Value* add(Value* x, Value* y) { return b_.CreateFAdd(x, y); }
  Value* sub(Value* x, Value* y) { return b_.CreateFSub(x, y); }
  Value* mul(Value* x, Value* y) { return b_.CreateFMul(x, y); }
  Value* div(Value* x, Value* y) { return b_.CreateFDiv(x, y); }
  Value* neg(Value* x) { return b_.CreateFNeg(x); }
  // x * y + z, fused where the target has FMA.
  Value* fma(Value* x, Value* y, Value* z) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type_}, {x, y, z});
  }
  // Horner evaluation of coeffs[0] * x^(n-1) + ... + coeffs[n-1].
  Value* horner(Value* x, const std::vector<double>& coeffs) {
    Value* p = c(coeffs[0]);
    for (size_t i = 1; i < coeffs.size(); ++i) p = fma(p, x, c(coeffs[i]));
    return p;
  }
  Value* lt(Value* x, Value* y) { return b_.CreateFCmpOLT(x, y); }
  Value* gt(Value* x, Value* y) { return b_.CreateFCmpOGT(x, y); }
  Value* eq(Value* x, Value* y) { return b_.CreateFCmpOEQ(x, y); }
  Value* ne(Value* x, Value* y) { return b_.CreateFCmpUNE(x, y); }
  Value* isnan(Value* x) { return b_.CreateFCmpUNO(x, x); }
  Value* sel(Value* cond, Value* x, Value* y) { return b_.CreateSelect(cond, x, y); }
  Value* abs(Value* x) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  Value* copysign(Value* mag, Value* sign) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag, sign);
  }
  Value* inf() { return c(INFINITY); }
  Value* nan() { return c(NAN); }

  // Integer view of the same lanes.
  Value* bits(Value* x) { return b_.CreateBitCast(x, int_type_); }
  Value* from_bits(Value* i) { return b_.CreateBitCast(i, type_); }
  Value* to_int(Value* x) { return b_.CreateFPToSI(x, int_type_); }
  Value* to_int_sat(Value* x) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {int_type_, type_}, {x});
  }
  Value* to_float(Value* i) { return b_.CreateSIToFP(i, type_); }
  // 2^n for integer n in the normal exponent range.
  Value* pow2i(Value* n) {
    return from_bits(b_.CreateShl(b_.CreateAdd(n, ci(exponent_bias())), mantissa_bits()));
  }
  // p * 2^n for n an integral float of either sign, as exp's range reduction leaves it,
  // through vscalef where the target and the vector width have it; else `single` says n is
  // in the normal exponent range (one shifted exponent), or not (two halves, so that
  // results near overflow and in the subnormal range come out right).
  Value* scale_by_pow2(Value* p, Value* n, bool single) {
    if (Value* s = scalef(p, n)) return s;
    Value* ni = to_int(n);
    if (single) return mul(p, pow2i(ni));
    Value* n1 = b_.CreateAShr(ni, 1);
    Value* n2 = b_.CreateSub(ni, n1);
    return mul(mul(p, pow2i(n1)), pow2i(n2));
  }

  Value* call(MathFn fn, Value* x) { return lib_.call(b_, fn, x); }

 private:
  // vscalefps / vscalefpd on a full 512-bit vector (all lanes, current rounding), or null.
  Value* scalef(Value* p, Value* n) {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(type_);
    if (!lib_.avx512_scalef() || vt == nullptr || vt->getNumElements() != (f64_ ? 8u : 16u)) {
      return nullptr;
    }
    const auto id = f64_ ? llvm::Intrinsic::x86_avx512_mask_scalef_pd_512
                         : llvm::Intrinsic::x86_avx512_mask_scalef_ps_512;
    llvm::Value* all = llvm::ConstantInt::get(b_.getIntNTy(f64_ ? 8 : 16), -1, true);
    llvm::Value* current_rounding = b_.getInt32(4);
    return b_.CreateIntrinsic(id, {}, {p, n, p, all, current_rounding});
  }

  llvm::IRBuilder<>& b_;
  llvm::Type* type_;
  llvm::Type* int_type_ = nullptr;
  MathLibrary& lib_;
  bool f64_ = false;
};

double factorial(int n) {
  double f = 1;
  for (int i = 2; i <= n; ++i) f *= i;
  return f;
}

// ---- Rounding, for targets without round instructions (SSE2 only). Adding and
// subtracting 2^p rounds to an integer in the current (nearest-even) mode; beyond 2^p every
// value is already an integer.
Value* emit_round_even(MathBuilder& m, Value* x) {
  Value* big = m.c(std::ldexp(1.0, m.mantissa_bits()));
  Value* a = m.abs(x);
  Value* r = m.copysign(m.sub(m.add(a, big), big), x);
  return m.sel(m.lt(a, big), r, x);
}

Value* emit_floor(MathBuilder& m, Value* x) {
  Value* r = m.call(MathFn::kRoundEven, x);
  return m.sel(m.gt(r, x), m.sub(r, m.c(1)), r);
}

Value* emit_ceil(MathBuilder& m, Value* x) {
  Value* r = m.call(MathFn::kRoundEven, x);
  return m.sel(m.lt(r, x), m.add(r, m.c(1)), r);
}

Value* emit_trunc(MathBuilder& m, Value* x) {
  return m.sel(m.lt(x, m.c(0)), m.call(MathFn::kCeil, x), m.call(MathFn::kFloor, x));
}

// ---- exp: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite: n * ln2_hi is exact), exp(r) by its
// Taylor series (degree 7 for f32: remainder 5e-9; 13 for f64: 4e-18), times 2^n applied in
// two halves so that results near overflow and in the subnormal range come out right, or by
// one vscalef on AVX-512's full vectors (26 -> 18 operations: f32 exp over data in the cache
// 0.30 -> 0.25 ns an element, sigmoid 0.42 -> 0.33).
Value* emit_exp(MathBuilder& m, Value* x) {
  const bool d = m.f64();
  const double hi = d ? 710.0 : 89.0;  // exp(hi) overflows: n saturates at 2^(max+1)
  // Far below where exp underflows to 0 (-746 / -104): at lo, n = -2 * bias, so each half
  // of 2^n is the bit pattern 0, i.e. +0.0, and the result is 0 without going through the
  // subnormals. Scaling down to 0 through them costs a microcode assist per vector on
  // x86, which made a softmax over masked (-inf, -1e9) scores 1.8x slower.
  const double lo = d ? -1418.0 : -176.0;
  const double ln2_hi = d ? 6.93147180369123816490e-01 : 0.693359375;
  const double ln2_lo = d ? 1.90821492927058770002e-10 : -2.12194440e-4;
  Value* xc = m.sel(m.lt(x, m.c(hi)), x, m.c(hi));  // NaN -> hi; fixed at the end
  xc = m.sel(m.gt(xc, m.c(lo)), xc, m.c(lo));
  Value* n = m.call(MathFn::kRoundEven, m.mul(xc, m.c(M_LOG2E)));
  Value* r = m.fma(n, m.c(-ln2_hi), xc);
  r = m.fma(n, m.c(-ln2_lo), r);
  const int degree = d ? 13 : 7;
  std::vector<double> coeffs;
  for (int k = degree; k >= 0; --k) coeffs.push_back(1.0 / factorial(k));
  Value* p = m.horner(r, coeffs);
  Value* y = m.scale_by_pow2(p, n, false);
  return m.sel(m.isnan(x), x, y);
}

// ---- log: x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = log(1+f) through
// s = f/(2+f): log(1+f) = f - (f^2/2 - s (f^2/2 + R(s^2))), R = sum 2 z^k / (2k+1)
// (the fdlibm arrangement, with the exact series instead of a fitted one).
Value* emit_log(MathBuilder& m, Value* x) {
  const bool d = m.f64();
  const int mbits = m.mantissa_bits();
  llvm::IRBuilder<>& b = m.b();
  // Subnormals: scale into the normal range first.
  Value* tiny = m.lt(x, m.c(std::ldexp(1.0, d ? -1022 : -126)));
  Value* xs = m.sel(tiny, m.mul(x, m.c(std::ldexp(1.0, mbits))), x);
  Value* e = b.CreateSelect(tiny, m.ci(-mbits), m.ci(0));
  Value* bits = m.bits(xs);
  Value* biased = b.CreateAnd(b.CreateLShr(bits, mbits), m.ci(d ? 0x7ff : 0xff));
  e = b.CreateAdd(e, b.CreateSub(biased, m.ci(m.exponent_bias())));
  int64_t mant_mask = (int64_t{1} << mbits) - 1;
  int64_t one_bits = int64_t{m.exponent_bias()} << mbits;
  Value* mant = m.from_bits(b.CreateOr(b.CreateAnd(bits, m.ci(mant_mask)), m.ci(one_bits)));
  Value* big = m.gt(mant, m.c(M_SQRT2));
  mant = m.sel(big, m.mul(mant, m.c(0.5)), mant);
  e = b.CreateSelect(big, b.CreateAdd(e, m.ci(1)), e);

  Value* f = m.sub(mant, m.c(1));
  Value* s = m.div(f, m.add(mant, m.c(1)));
  Value* z = m.mul(s, s);
  // |s| <= 0.1716, z <= 0.0295: 4 terms leave 2e-9 (f32), 10 terms 1e-18 (f64).
  const int terms = d ? 10 : 4;
  std::vector<double> coeffs;
  for (int k = terms; k >= 1; --k) coeffs.push_back(2.0 / (2 * k + 1));
  Value* R = m.mul(z, m.horner(z, coeffs));
  Value* hfsq = m.mul(m.c(0.5), m.mul(f, f));
  Value* logm = m.sub(f, m.sub(hfsq, m.mul(s, m.add(hfsq, R))));
  const double ln2_hi = d ? 6.93147180369123816490e-01 : 0.693359375;
  const double ln2_lo = d ? 1.90821492927058770002e-10 : -2.12194440e-4;
  Value* ef = m.to_float(e);
  Value* y = m.fma(ef, m.c(ln2_lo), logm);
  y = m.fma(ef, m.c(ln2_hi), y);

  y = m.sel(m.eq(x, m.inf()), x, y);
  y = m.sel(m.eq(x, m.c(0)), m.c(-INFINITY), y);
  return m.sel(b.CreateFCmpULT(x, m.c(0)), m.nan(), y);  // negative or NaN
}

// ---- expm1 / log1p: Kahan's tricks. With u = exp(x) as computed, (u-1) * x / log(u) is
// accurate to a few ulps even where u - 1 cancels; log1p likewise with u = 1 + x.
Value* emit_expm1(MathBuilder& m, Value* x) {
  Value* u = m.call(MathFn::kExp, x);
  Value* um1 = m.sub(u, m.c(1));
  Value* y = m.mul(um1, m.div(x, m.call(MathFn::kLog, u)));
  y = m.sel(m.eq(um1, m.c(0)), x, y);
  y = m.sel(m.eq(um1, m.c(-1)), m.c(-1), y);
  return m.sel(m.eq(u, m.inf()), u, y);
}

Value* emit_log1p(MathBuilder& m, Value* x) {
  Value* u = m.add(m.c(1), x);
  Value* y = m.mul(m.call(MathFn::kLog, u), m.div(x, m.sub(u, m.c(1))));
  y = m.sel(m.eq(u, m.c(1)), x, y);
  return m.sel(m.eq(x, m.inf()), x, y);
}

// ---- tanh. f32: odd polynomial below 0.625 (Cephes tanhf), 1 - 2/(exp(2|x|) + 1) above;
// f64: expm1(2|x|) / (expm1(2|x|) + 2), exact to a few ulps everywhere. Both saturate to
// +-1 through exp's overflow to inf.
Value* emit_tanh(MathBuilder& m, Value* x) {
  Value* a = m.abs(x);
  if (m.f64()) {
    Value* e = m.call(MathFn::kExpm1, m.add(a, a));
    Value* t = m.div(e, m.add(e, m.c(2)));
    t = m.sel(m.gt(a, m.c(22)), m.c(1), t);
    return m.copysign(t, x);
  }
  Value* z = m.mul(x, x);
  Value* p = m.horner(z, {-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
                          -3.33332819422e-1});
  Value* small = m.fma(m.mul(x, z), p, x);
  Value* e = m.call(MathFn::kExp, m.add(a, a));
  Value* large = m.copysign(m.sub(m.c(1), m.div(m.c(2), m.add(e, m.c(1)))), x);
  return m.sel(m.lt(a, m.c(0.625)), small, large);
}

Value* emit_sigmoid(MathBuilder& m, Value* x) {
  return m.div(m.c(1), m.add(m.c(1), m.call(MathFn::kExp, m.neg(x))));
}

// ---- erf. f32, without a division: x P(x^2) below 0.921875 (P of degree 5), and
// 1 - exp(Q(|x|)) above, Q of degree 6 fitted to log(erfc) on [0.921875, 3.925] (past it
// erf rounds to 1), with an exp that needs no range checks there; both fits weighted least
// squares (Lawson's iteration towards minimax, scripts/fit_erf.py), 1.6e-8 and 1.5e-9
// relative to erf before rounding. About 35 vector operations where the Abramowitz &
// Stegun form this replaced took 55 and a division: 0.69 -> 0.47 ns an element over data
// in the cache, a GELU in a pointwise conv's epilogue 162 -> 124 us over [64, 56, 56].
// f64: erf(x) = 2/sqrt(pi) x
// e^{-x^2} sum (2x^2)^n / (2n+1)!! below 3 (positive terms: no cancellation), and
// 1 - erfc(x) with erfc from its continued fraction (14 levels) above.
Value* emit_erf(MathBuilder& m, Value* x) {
  const double two_over_sqrt_pi = 1.1283791670955126;
  Value* a = m.abs(x);
  Value* a2 = m.mul(a, a);
  if (!m.f64()) {
    Value* small =
        m.mul(x, m.horner(a2, {-0.0005990822271278173, 0.004993175186438853, -0.02676661360402771,
                               0.11281816118182045, -0.37612493684268333, 1.1283791495559004}));
    const double top = 3.925;
    Value* ac = m.sel(m.lt(a, m.c(top)), a, m.c(top));  // NaN -> top; fixed at the end
    Value* q = m.horner(ac, {0.0001957245258932261, -0.003041130720979335, 0.022218602066080617,
                             -0.10391434007292777, -0.6372019102942402, -1.127663949459654,
                             -0.00019850171003047445});
    // exp(q) for q in [-17.5, -1.7]: no overflow, underflow or NaN to handle, so a lean
    // exp: q = n ln2 + r (Cody-Waite), exp(r) by its Taylor series to degree 6 (1.2e-7
    // relative, i.e. 2.3e-8 of erf at most), times 2^n as one exponent.
    Value* n = m.call(MathFn::kRoundEven, m.mul(q, m.c(M_LOG2E)));
    Value* r = m.fma(n, m.c(-0.693359375), q);
    r = m.fma(n, m.c(2.12194440e-4), r);
    std::vector<double> taylor;
    for (int k = 6; k >= 0; --k) taylor.push_back(1.0 / factorial(k));
    Value* e = m.scale_by_pow2(m.horner(r, taylor), n, true);
    Value* large = m.sub(m.c(1), e);
    Value* y = m.sel(m.lt(a, m.c(0.921875)), small, m.copysign(large, x));
    return m.sel(m.isnan(x), x, y);
  }
  Value* ea2 = m.call(MathFn::kExp, m.neg(a2));
  std::vector<double> coeffs(50);
  double dfact = 1;
  for (int n = 0; n < 50; ++n) {
    dfact *= 2 * n + 1;
    coeffs[49 - n] = 1.0 / dfact;
  }
  Value* series =
      m.mul(m.mul(m.c(two_over_sqrt_pi), m.mul(a, ea2)), m.horner(m.add(a2, a2), coeffs));
  Value* t = a;
  for (int k = 14; k >= 1; --k) t = m.add(a, m.div(m.c(k * 0.5), t));
  Value* erfc = m.div(ea2, m.mul(m.c(std::sqrt(M_PI)), t));
  Value* y = m.sel(m.lt(a, m.c(3)), series, m.sub(m.c(1), erfc));
  return m.copysign(y, x);
}

// ---- sin / cos: |x| = k pi/2 + z with |z| <= pi/4 (Cody-Waite with a four-part pi/4, exact
// products for |x| up to ~8e3 in f32 and ~1e9 in f64), then sin or cos of z by
// Taylor series (f32: to z^9 / z^10, remainder < 3e-9; f64: to z^17 / z^18) and the
// quadrant's sign. cos(x) = sin(|x| + pi/2) shifts the quadrant by one.
Value* emit_sincos(MathBuilder& m, Value* x, bool cosine) {
  const bool d = m.f64();
  llvm::IRBuilder<>& b = m.b();
  // pi/4 = dp1 + dp2 + dp3 + dp4; dp1, dp2 have trailing zero bits (exact products), the
  // fourth part carries pi/4 to ~2^-130 so results near multiples of pi stay accurate.
  const double dp1 = d ? 7.85398125648498535156e-1 : 0.78515625;
  const double dp2 = d ? 3.77489470793079817668e-8 : 2.4187564849853515625e-4;
  const double dp3 = d ? 2.69515142907905952645e-15 : 3.774895063202166e-08;
  const double dp4 = d ? 4.23921383018445e-32 : -8.575622550029409e-16;
  Value* a = m.abs(x);
  Value* j = m.to_int_sat(m.call(MathFn::kFloor, m.mul(a, m.c(4 / M_PI))));
  j = b.CreateAnd(b.CreateAdd(j, m.ci(1)), m.ci(-2));  // round up to even
  Value* y = m.to_float(j);
  Value* z = m.fma(y, m.c(-dp1), a);
  z = m.fma(y, m.c(-dp2), z);
  z = m.fma(y, m.c(-dp3), z);
  z = m.fma(y, m.c(-dp4), z);
  Value* q = b.CreateAShr(j, 1);
  if (cosine) q = b.CreateAdd(q, m.ci(1));
  Value* z2 = m.mul(z, z);
  const int sin_terms = d ? 8 : 4, cos_terms = d ? 9 : 5;
  std::vector<double> sc, cc;
  for (int k = sin_terms; k >= 1; --k) sc.push_back((k % 2 ? -1.0 : 1.0) / factorial(2 * k + 1));
  for (int k = cos_terms; k >= 2; --k) cc.push_back((k % 2 ? -1.0 : 1.0) / factorial(2 * k));
  Value* s = m.fma(m.mul(z, z2), m.horner(z2, sc), z);
  Value* c = m.fma(m.mul(z2, z2), m.horner(z2, cc), m.fma(m.c(-0.5), z2, m.c(1)));
  Value* odd = b.CreateICmpNE(b.CreateAnd(q, m.ci(1)), m.ci(0));
  Value* negate = b.CreateICmpNE(b.CreateAnd(q, m.ci(2)), m.ci(0));
  Value* r = m.sel(odd, c, s);
  r = m.sel(negate, m.neg(r), r);
  if (!cosine) {
    // sin is odd: take x's sign bit (also right for -0).
    Value* sign = b.CreateAnd(m.bits(x), m.ci(d ? INT64_MIN : int64_t{1} << 31));
    r = m.from_bits(b.CreateXor(m.bits(r), sign));
  }
  return m.sel(m.eq(a, m.inf()), m.nan(), r);  // sin(+-inf), cos(+-inf) are NaN
}

// ---- atan: |x| = a reduced to |z| <= tan(pi/8) by atan(a) = pi/4 + atan((a-1)/(a+1)) and
// atan(a) = pi/2 - atan(1/a) (Cephes' split), then atan(z) by its Taylor series
// z - z^3/3 + z^5/5 - ... (z^2 <= 0.1716: 9 terms leave 7e-9 relative for f32, 21 terms
// 2e-18 for f64), pi/4 and pi/2 added as a head and a tail so the sum keeps its last bits.
// x's sign is put back last (odd; -0 stays -0); inf goes to +-pi/2 through 1/a = 0.
Value* emit_atan(MathBuilder& m, Value* x) {
  const bool d = m.f64();
  Value* a = m.abs(x);
  Value* big = m.gt(a, m.c(1 + M_SQRT2));  // tan(3 pi/8)
  Value* mid = m.gt(a, m.c(M_SQRT2 - 1));  // tan(pi/8)
  Value* z =
      m.sel(big, m.div(m.c(-1), a), m.sel(mid, m.div(m.sub(a, m.c(1)), m.add(a, m.c(1))), a));
  // The tails: pi/2 and pi/4 minus their values rounded to the type.
  const double pio2_lo = d ? 6.123233995736766036e-17 : M_PI_2 - static_cast<float>(M_PI_2);
  const double pio4_lo = d ? 3.061616997868383018e-17 : M_PI_4 - static_cast<float>(M_PI_4);
  Value* head = m.sel(big, m.c(M_PI_2), m.sel(mid, m.c(M_PI_4), m.c(0)));
  Value* tail = m.sel(big, m.c(pio2_lo), m.sel(mid, m.c(pio4_lo), m.c(0)));
  const int terms = d ? 21 : 9;
  std::vector<double> coeffs;
  for (int k = terms - 1; k >= 1; --k) coeffs.push_back((k % 2 ? -1.0 : 1.0) / (2 * k + 1));
  Value* z2 = m.mul(z, z);
  Value* p = m.fma(m.mul(z, z2), m.horner(z2, coeffs), z);
  return m.copysign(m.add(head, m.add(p, tail)), x);
}

// ---- pow through exp(y log|x|), in f64 for f32 inputs so that the error amplification
// by |y log x| stays below f32's rounding. Negative bases take integral exponents only.
Value* emit_pow_core(MathBuilder& m, Value* x, Value* y) {
  llvm::IRBuilder<>& b = m.b();
  Value* r = m.call(MathFn::kExp, m.mul(y, m.call(MathFn::kLog, m.abs(x))));
  Value* y_int = m.eq(m.call(MathFn::kFloor, y), y);
  Value* half = m.mul(y, m.c(0.5));
  Value* y_odd = b.CreateAnd(y_int, m.ne(m.call(MathFn::kFloor, half), half));
  Value* negative = m.lt(x, m.c(0));
  r = m.sel(b.CreateAnd(negative, y_odd), m.neg(r), r);
  r = m.sel(b.CreateAnd(negative, b.CreateNot(y_int)), m.nan(), r);
  return m.sel(b.CreateOr(m.eq(y, m.c(0)), m.eq(x, m.c(1))), m.c(1), r);
}

// ---- floor modulo: r = x - trunc(x/y) * y (exact for quotients below 2^29 in f32, which
// is computed in f64, and to within an ulp in f64), then moved to y's sign.
Value* emit_floor_mod_core(MathBuilder& m, Value* x, Value* y) {
  Value* q = m.call(MathFn::kTrunc, m.div(x, y));
  Value* r = m.fma(m.neg(q), y, x);
  return r;  // the sign fix-up is done in the caller's precision
}

}  // namespace

llvm::Value* MathLibrary::call(llvm::IRBuilder<>& b, MathFn fn, llvm::Value* x) {
  if (hooks_.has_native_rounding()) {
    switch (fn) {
      case MathFn::kFloor:
        return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
      case MathFn::kCeil:
        return b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
      case MathFn::kTrunc:
        return b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x);
      case MathFn::kRoundEven:
        return b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
      default:
        break;
    }
  }
  return b.CreateCall(function(static_cast<int>(fn), false, x->getType()), {x});
}

llvm::Value* MathLibrary::call(llvm::IRBuilder<>& b, MathFn2 fn, llvm::Value* x, llvm::Value* y) {
  return b.CreateCall(function(static_cast<int>(fn), true, x->getType()), {x, y});
}

llvm::Function* MathLibrary::function(int fn, bool binary, llvm::Type* type) {
  static const char* const kUnaryNames[] = {"exp",     "log",  "expm1", "log1p",    "tanh",
                                            "sigmoid", "erf",  "sin",   "cos",      "atan",
                                            "floor",   "ceil", "trunc", "roundeven"};
  static const char* const kBinaryNames[] = {"pow", "floormod"};
  std::string type_name;
  llvm::Type* elem = type->getScalarType();
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
    type_name = "v" + std::to_string(vt->getNumElements());
  }
  type_name += elem->isDoubleTy() ? "f64" : "f32";
  std::string name =
      std::string("dynvm.math.") + (binary ? kBinaryNames[fn] : kUnaryNames[fn]) + "." + type_name;
  if (auto it = functions_.find(name); it != functions_.end()) return it->second;

  std::vector<llvm::Type*> params(binary ? 2 : 1, type);
  auto* fn_type = llvm::FunctionType::get(type, params, false);
  auto* f = llvm::Function::Create(fn_type, llvm::Function::InternalLinkage, name, module_);
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->setDoesNotAccessMemory();
  hooks_.add_function_attributes(f);
  functions_[name] = f;

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(module_.getContext(), "entry", f));
  Value* x = f->getArg(0);
  Value* result = nullptr;
  if (binary) {
    Value* y = f->getArg(1);
    bool narrow = elem->isFloatTy();
    llvm::Type* wide = type;
    if (narrow) {
      // f32 goes through f64: see emit_pow_core / emit_floor_mod_core.
      wide = llvm::isa<llvm::VectorType>(type)
                 ? llvm::VectorType::get(b.getDoubleTy(),
                                         llvm::cast<llvm::VectorType>(type)->getElementCount())
                 : b.getDoubleTy();
    }
    MathBuilder m(b, wide, *this);
    Value* xw = narrow ? b.CreateFPExt(x, wide) : x;
    Value* yw = narrow ? b.CreateFPExt(y, wide) : y;
    if (static_cast<MathFn2>(fn) == MathFn2::kPow) {
      result = emit_pow_core(m, xw, yw);
      if (narrow) result = b.CreateFPTrunc(result, type);
    } else {
      Value* r = emit_floor_mod_core(m, xw, yw);
      if (narrow) r = b.CreateFPTrunc(r, type);
      MathBuilder n(b, type, *this);
      Value* zero = n.c(0);
      Value* wrong_sign = b.CreateXor(n.lt(r, zero), n.lt(y, zero));
      Value* fix = b.CreateAnd(n.ne(r, zero), b.CreateAnd(wrong_sign, b.CreateNot(n.isnan(r))));
      result = n.sel(fix, n.add(r, y), r);
    }
  } else {
    MathBuilder m(b, type, *this);
    switch (static_cast<MathFn>(fn)) {
      case MathFn::kExp:
        result = emit_exp(m, x);
        break;
      case MathFn::kLog:
        result = emit_log(m, x);
        break;
      case MathFn::kExpm1:
        result = emit_expm1(m, x);
        break;
      case MathFn::kLog1p:
        result = emit_log1p(m, x);
        break;
      case MathFn::kTanh:
        result = emit_tanh(m, x);
        break;
      case MathFn::kSigmoid:
        result = emit_sigmoid(m, x);
        break;
      case MathFn::kErf:
        result = emit_erf(m, x);
        break;
      case MathFn::kSin:
        result = emit_sincos(m, x, false);
        break;
      case MathFn::kCos:
        result = emit_sincos(m, x, true);
        break;
      case MathFn::kAtan:
        result = emit_atan(m, x);
        break;
      case MathFn::kFloor:
        result = emit_floor(m, x);
        break;
      case MathFn::kCeil:
        result = emit_ceil(m, x);
        break;
      case MathFn::kTrunc:
        result = emit_trunc(m, x);
        break;
      case MathFn::kRoundEven:
        result = emit_round_even(m, x);
        break;
    }
  }
  b.CreateRet(result);
  return f;
}

}  // namespace dynvm::codegen
