// float16 and bfloat16 <-> float conversions for the tools (vmrun makes random inputs and
// prints outputs of every dtype; vmserve reads and writes them as JSON numbers). Kernels
// never use these: generated code converts on its own. Rounding is to nearest, ties to even, as
// NumPy and the hardware do.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace dynvm::vm {

inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    float f = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -f : f;
  }
  uint32_t bits = exponent == 31 ? sign | 0x7f800000u | (mantissa << 13)
                                 : sign | ((exponent + 112) << 23) | (mantissa << 13);
  return std::bit_cast<float>(bits);
}

inline uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | 0x7c00 | (x > 0x7f800000u ? 0x200 : 0);  // inf, NaN
  if (x >= 0x477ff000u) return sign | 0x7c00;                                  // rounds to inf
  if (x < 0x38800000u) {  // below the smallest normal half: a subnormal (or zero)
    float scaled = std::bit_cast<float>(x) * 16777216.0f;  // exact: a power of two
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  x += 0xfffu + ((x >> 13) & 1);  // round the 13 dropped bits to nearest even
  return sign | static_cast<uint16_t>((x - 0x38000000u) >> 13);
}

inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }

inline uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace dynvm::vm
