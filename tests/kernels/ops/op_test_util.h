// Helpers for the op tests: random host tensors (f32, i32, i64, bool), outputs poisoned
// before each run (NaN for floats, a sentinel for integers, 0xA5 for bool) so that an
// unwritten element fails, numpy broadcasting for the references, and value checks
// against double-precision references.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/kernels/support/op_runner.h"
#include "vm/error.h"
#include "vm/tensor.h"

namespace dynvm::ops::testing {

inline constexpr vm::DType kF32 = vm::DType::kFloat32;
inline constexpr vm::DType kF64 = vm::DType::kFloat64;
inline constexpr vm::DType kI32 = vm::DType::kInt32;
inline constexpr vm::DType kI64 = vm::DType::kInt64;
inline constexpr vm::DType kU8 = vm::DType::kUInt8;
inline constexpr vm::DType kBool = vm::DType::kBool;

inline std::vector<arith::Expr> dims(const std::vector<int64_t>& shape) {
  std::vector<arith::Expr> out;
  for (int64_t d : shape) out.push_back(arith::make_int(d));
  return out;
}

inline int64_t numel(const vm::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Row-major coordinates of flat index `i` in `shape`, and back.
inline std::vector<int64_t> unravel(int64_t i, const vm::Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = i % shape[k];
    i /= shape[k];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const vm::Shape& shape) {
  int64_t flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + idx[k];
  return flat;
}

inline std::string shape_name(const vm::Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

// Element i of a tensor of any tested dtype, as double.
inline double at(const vm::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case kF32:
      return t.data_as<float>()[i];
    case kF64:
      return t.data_as<double>()[i];
    case kI32:
      return t.data_as<int32_t>()[i];
    case kI64:
      return static_cast<double>(t.data_as<int64_t>()[i]);
    case kU8:
      return t.data_as<uint8_t>()[i];
    case kBool: {
      uint8_t b = t.data_as<uint8_t>()[i];
      return b <= 1 ? b : std::nan("");
    }
    default:
      ADD_FAILURE() << "untested dtype";
      return 0;
  }
}

inline std::vector<double> values(const vm::Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(at(t, i));
  return v;
}

// Uniform in [lo, hi) for floats; integers in [lo, hi] for ints; 0/1 for bool.
inline vm::Tensor random_tensor(const vm::Shape& shape, vm::DType dtype, std::mt19937& rng,
                                double lo = -1, double hi = 1) {
  vm::Tensor t = vm::Tensor::empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case kF32:
        t.data_as<float>()[i] =
            static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng));
        break;
      case kF64:
        t.data_as<double>()[i] = std::uniform_real_distribution<double>(lo, hi)(rng);
        break;
      case kI32:
        t.data_as<int32_t>()[i] = static_cast<int32_t>(std::uniform_int_distribution<int64_t>(
            static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng));
        break;
      case kI64:
        t.data_as<int64_t>()[i] = std::uniform_int_distribution<int64_t>(
            static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng);
        break;
      case kU8:
        t.data_as<uint8_t>()[i] = static_cast<uint8_t>(std::uniform_int_distribution<int64_t>(
            static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng));
        break;
      case kBool:
        t.data_as<uint8_t>()[i] = static_cast<uint8_t>(rng() & 1);
        break;
      default:
        ADD_FAILURE() << "untested dtype";
    }
  }
  return t;
}

inline vm::Tensor poisoned(const vm::Shape& shape, vm::DType dtype) {
  vm::Tensor t = vm::Tensor::empty(shape, dtype);
  if (dtype == kF32) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = std::nanf("");
  } else if (dtype == kF64) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<double>()[i] = std::nan("");
  } else {
    std::memset(t.data(), 0xa5, t.nbytes());
  }
  return t;
}

// The flat index into a tensor of `in` shape that numpy broadcasting reads for flat output
// index `i` of `out` shape.
inline int64_t broadcast_index(const vm::Shape& in, const vm::Shape& out, int64_t i) {
  int64_t result = 0, stride = 1;
  size_t offset = out.size() - in.size();
  for (size_t k = out.size(); k-- > 0;) {
    int64_t coord = i % out[k];
    i /= out[k];
    if (k < offset) continue;
    int64_t d = in[k - offset];
    if (d != 1) result += coord * stride;
    stride *= d;
  }
  return result;
}

// got[i] == want[i] within atol + rtol * |want[i]|; NaN matches only NaN (and a NaN want
// with a poison NaN cannot be told apart, so callers avoid NaN references).
inline void expect_close(const vm::Tensor& got, const std::vector<double>& want, double rtol,
                         double atol, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = at(got, i), w = want[static_cast<size_t>(i)];
    bool ok =
        std::isnan(w) ? std::isnan(g) : (g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w));
    if (!ok && ++bad <= 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << w;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.numel() << " elements differ";
}

// Runs `symbol` on inputs + one poisoned output of `out_shape`, returns the output.
inline vm::Tensor run_op(const OpLibrary& lib, const std::string& symbol,
                         std::vector<vm::Tensor> inputs, const vm::Shape& out_shape,
                         vm::DType out_dtype, bool parallel = true) {
  vm::Tensor out = poisoned(out_shape, out_dtype);
  inputs.push_back(out);
  OpResult r = lib.run(symbol, inputs, parallel);
  EXPECT_TRUE(r.ok()) << symbol << " failed (" << r.status << "): " << r.error;
  return out;
}

}  // namespace dynvm::ops::testing
