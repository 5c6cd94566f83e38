// The arrays that the .npy tests exchange with NumPy. npy_numpy.py holds the same list and
// the same value formulas, so each side computes the expected values on its own and
// neither compares the reader against the writer it came with.
//
// Element i (flat, C order) of a sample is:
//   floats:         (i - 3) * 0.25                      (exact in float16 too)
//   complex:        (i - 3) * 0.25 + (i * 0.5)j
//   ints of b bits: (i * M_b) mod 2^b, minus 2^(b-1) if signed, with
//                   M_8 = 37, M_16 = 4099, M_32 = 2654435761, M_64 = 0x9E3779B97F4A7C15
//                   (so the values reach both ends of each type's range)
//   bool:           i % 3 == 0
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "vm/float16.h"
#include "vm/tensor.h"

namespace dynvm::testing {

struct NpySample {
  std::string name;
  vm::DType dtype;
  vm::Shape shape;
};

inline const std::vector<NpySample>& npy_samples() {
  using vm::DType;
  static const std::vector<NpySample> samples = {
      {"f32_2x3", DType::kFloat32, {2, 3}},
      {"f64_5", DType::kFloat64, {5}},
      {"f16_4x2", DType::kFloat16, {4, 2}},
      {"i8_7", DType::kInt8, {7}},
      {"i16_3x3", DType::kInt16, {3, 3}},
      {"i32_2x2x2", DType::kInt32, {2, 2, 2}},
      {"i64_6", DType::kInt64, {6}},
      {"u8_10", DType::kUInt8, {10}},
      {"u16_4", DType::kUInt16, {4}},
      {"u32_3", DType::kUInt32, {3}},
      {"u64_5", DType::kUInt64, {5}},
      {"bool_9", DType::kBool, {9}},
      {"c64_3", DType::kComplex64, {3}},
      {"c128_2", DType::kComplex128, {2}},
      {"f32_scalar", DType::kFloat32, {}},
      {"i64_empty_0x3", DType::kInt64, {0, 3}},
      {"f32_empty_0", DType::kFloat32, {0}},
      {"i32_2x1x3x2", DType::kInt32, {2, 1, 3, 2}},
      {"f32_3x300x100", DType::kFloat32, {3, 300, 100}},
  };
  return samples;
}

inline vm::Tensor npy_sample_tensor(vm::DType dtype, const vm::Shape& shape) {
  using vm::DType;
  vm::Tensor t = vm::Tensor::empty(shape, dtype);
  auto* bytes = static_cast<uint8_t*>(t.data());
  auto put = [&](int64_t i, auto value) {
    std::memcpy(bytes + i * sizeof(value), &value, sizeof(value));
  };
  auto int_bits = [](int64_t i, int bits, bool is_signed) -> uint64_t {
    uint64_t m = bits == 8    ? 37u
                 : bits == 16 ? 4099u
                 : bits == 32 ? 2654435761u
                              : 0x9E3779B97F4A7C15ull;
    uint64_t v = static_cast<uint64_t>(i) * m;  // mod 2^64
    if (bits < 64) v &= (uint64_t{1} << bits) - 1;
    if (is_signed) v -= uint64_t{1} << (bits - 1);  // two's complement of v - 2^(b-1)
    return v;
  };
  for (int64_t i = 0; i < t.numel(); ++i) {
    double real = static_cast<double>(i - 3) * 0.25;
    switch (dtype) {
      case DType::kFloat32:
        put(i, static_cast<float>(real));
        break;
      case DType::kFloat64:
        put(i, real);
        break;
      case DType::kFloat16:
        put(i, vm::float_to_half(static_cast<float>(real)));
        break;
      case DType::kBFloat16:
        put(i, vm::float_to_bfloat16(static_cast<float>(real)));
        break;
      case DType::kComplex64: {
        float c[2] = {static_cast<float>(real), static_cast<float>(i) * 0.5f};
        std::memcpy(bytes + i * sizeof(c), c, sizeof(c));
        break;
      }
      case DType::kComplex128: {
        double c[2] = {real, static_cast<double>(i) * 0.5};
        std::memcpy(bytes + i * sizeof(c), c, sizeof(c));
        break;
      }
      case DType::kInt8:
        put(i, static_cast<int8_t>(int_bits(i, 8, true)));
        break;
      case DType::kInt16:
        put(i, static_cast<int16_t>(int_bits(i, 16, true)));
        break;
      case DType::kInt32:
        put(i, static_cast<int32_t>(int_bits(i, 32, true)));
        break;
      case DType::kInt64:
        put(i, static_cast<int64_t>(int_bits(i, 64, true)));
        break;
      case DType::kUInt8:
        put(i, static_cast<uint8_t>(int_bits(i, 8, false)));
        break;
      case DType::kUInt16:
        put(i, static_cast<uint16_t>(int_bits(i, 16, false)));
        break;
      case DType::kUInt32:
        put(i, static_cast<uint32_t>(int_bits(i, 32, false)));
        break;
      case DType::kUInt64:
        put(i, int_bits(i, 64, false));
        break;
      case DType::kBool:
        put(i, static_cast<uint8_t>(i % 3 == 0));
        break;
    }
  }
  return t;
}

inline vm::Tensor npy_sample_tensor(const NpySample& s) {
  return npy_sample_tensor(s.dtype, s.shape);
}

}  // namespace dynvm::testing
