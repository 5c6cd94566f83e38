// Helpers for the TE tests: random host tensors, outputs poisoned before a run (NaN for
// floats, a sentinel for integers) so that an element the kernel never wrote fails the
// comparison, lowering checked by the TIR verifier, and running on the reference TIR
// evaluator (tests/kernels/support). References are plain double loops in each test.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/te/lower_te.h"
#include "kernels/te/schedule.h"
#include "kernels/tir/functor.h"
#include "kernels/tir/printer.h"
#include "kernels/tir/verifier.h"
#include "tests/kernels/support/tir_eval.h"
#include "vm/tensor.h"

namespace dynvm::te::testing {

inline constexpr int64_t kIntPoison = -777;
inline constexpr vm::DType kF32 = vm::DType::kFloat32;
inline constexpr vm::DType kI64 = vm::DType::kInt64;

// Values in [lo, hi), rounded to float so that the double reference sees the same inputs.
inline vm::Tensor random_f32(const vm::Shape& shape, std::mt19937& rng, float lo = -1.0f,
                             float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(vm::shape_numel(shape)));
  for (float& v : values) v = dist(rng);
  return vm::Tensor::from_vector(values, shape, kF32);
}

// Integers in [lo, hi], as f32 (ties for argmax) or i64 (gather indices).
inline vm::Tensor random_ints(const vm::Shape& shape, std::mt19937& rng, int64_t lo, int64_t hi,
                              vm::DType dtype) {
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  size_t n = static_cast<size_t>(vm::shape_numel(shape));
  if (dtype == kF32) {
    std::vector<float> values(n);
    for (float& v : values) v = static_cast<float>(dist(rng));
    return vm::Tensor::from_vector(values, shape, kF32);
  }
  std::vector<int64_t> values(n);
  for (int64_t& v : values) v = dist(rng);
  return vm::Tensor::from_vector(values, shape, kI64);
}

inline vm::Tensor poisoned(const vm::Shape& shape, vm::DType dtype) {
  size_t n = static_cast<size_t>(vm::shape_numel(shape));
  if (dtype == kF32) return vm::Tensor::from_vector(std::vector<float>(n, NAN), shape, dtype);
  return vm::Tensor::from_vector(std::vector<int64_t>(n, kIntPoison), shape, dtype);
}

// Element i of a f32 or i64 tensor, as double.
inline double at(const vm::Tensor& t, int64_t i) {
  if (t.dtype() == kF32) return t.data_as<float>()[i];
  return static_cast<double>(t.data_as<int64_t>()[i]);
}

// Lowers and checks the result with the TIR verifier at its first stage. With
// DYNVM_TE_TEST_DUMP set, prints the lowered function.
inline tir::PrimFunc lower_checked(const Schedule& s, const std::vector<TensorRef>& args,
                                   const std::string& name) {
  tir::PrimFunc f = lower(s, args, name);
  if (std::getenv("DYNVM_TE_TEST_DUMP")) std::cout << tir::to_string(f) << "\n";
  tir::verify(f, tir::VerifyStage::kLowered);
  return f;
}

inline void run(const tir::PrimFunc& f, const std::vector<vm::Tensor>& args) {
  tir::testing::evaluate(f, args);
}

// got[i] == want[i] within tol * max(1, |want[i]|); NaN / sentinel never matches.
inline void expect_values(const vm::Tensor& got, const std::vector<double>& want, double tol,
                          const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = at(got, i), w = want[static_cast<size_t>(i)];
    bool ok = std::isfinite(g) && std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w));
    if (!ok && ++bad <= 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << w;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.numel() << " elements wrong";
}

// Every statement of f's body of the given kind.
inline std::vector<tir::Stmt> stmts_of(const tir::PrimFunc& f, tir::StmtKind kind) {
  std::vector<tir::Stmt> out;
  tir::for_each_stmt(f.body, [&](const tir::Stmt& s) {
    if (s.kind() == kind) out.push_back(s);
  });
  return out;
}

inline std::string shape_name(const vm::Shape& shape) { return vm::shape_str(shape); }

}  // namespace dynvm::te::testing
