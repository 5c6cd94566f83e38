// Exact int64 arithmetic for the symbolic integer library: floor division and modulo (the
// semantics of every floordiv/floormod in dynvm, as in Python), overflow-checked operations
// that report failure instead of invoking undefined behaviour, and the saturating
// arithmetic on interval endpoints used by bounds analysis, where INT64_MIN and INT64_MAX
// stand for -inf and +inf.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace dynvm::arith {

inline constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_neg(int64_t a) { return checked_sub(0, a); }

// Floor division, rounding toward -inf. nullopt for b == 0 and for INT64_MIN / -1, the one
// quotient that does not fit.
inline std::optional<int64_t> checked_floordiv(int64_t a, int64_t b) {
  if (b == 0 || (a == kNegInf && b == -1)) return std::nullopt;
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// Floor modulo: the result has the sign of b (or is 0), and a == b * floordiv(a, b) + it.
// nullopt only for b == 0; b == -1 is special-cased because INT64_MIN % -1 is UB in C++.
inline std::optional<int64_t> checked_floormod(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1 || b == 1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Greatest common divisor of |a| and |b|; gcd(0, 0) == 0. Returns nullopt when the answer
// is 2^63 (only possible with INT64_MIN operands), which does not fit.
inline std::optional<int64_t> checked_gcd(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t y = b < 0 ? 0 - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  while (y != 0) {
    uint64_t t = x % y;
    x = y;
    y = t;
  }
  if (x > static_cast<uint64_t>(kPosInf)) return std::nullopt;
  return static_cast<int64_t>(x);
}

// ---- Saturating arithmetic on interval endpoints (kNegInf / kPosInf are infinities). ----
// Results that do not fit saturate to the infinity on their side, which keeps every interval
// a sound over-approximation.

inline int64_t bound_neg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}

// Sum of two lower bounds: -inf absorbs everything, so the result is never too high.
inline int64_t bound_add_lo(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  auto r = checked_add(a, b);
  return r ? *r : (a > 0 ? kPosInf : kNegInf);
}

// Sum of two upper bounds: +inf absorbs everything, so the result is never too low.
inline int64_t bound_add_hi(int64_t a, int64_t b) {
  if (a == kPosInf || b == kPosInf) return kPosInf;
  if (a == kNegInf || b == kNegInf) return kNegInf;
  auto r = checked_add(a, b);
  return r ? *r : (a > 0 ? kPosInf : kNegInf);
}

// Product of two endpoints; infinity times zero is zero (an unbounded value times 0 is 0).
inline int64_t bound_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  if (a == kNegInf || a == kPosInf || b == kNegInf || b == kPosInf) {
    return negative ? kNegInf : kPosInf;
  }
  auto r = checked_mul(a, b);
  if (!r) return negative ? kNegInf : kPosInf;
  // A finite product that lands exactly on an infinity's encoding is still sound to read as
  // that infinity.
  return *r;
}

// floordiv of an endpoint by a finite positive constant; infinities stay infinite.
inline int64_t bound_floordiv_pos(int64_t a, int64_t c) {
  if (a == kNegInf || a == kPosInf) return a;
  return *checked_floordiv(a, c);
}

}  // namespace dynvm::arith
