// Scans (te::scan): a running sum along either axis of a symbolic [m, n] tensor, forward
// and reverse, with the other axis parallel or vectorized, run on the reference TIR
// evaluator against plain loops; the lowered recurrence is linear (one store per element);
// schedules that would break the recurrence are UserErrors.
#include <gtest/gtest.h>

#include "tests/kernels/te/te_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::te {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

const std::vector<std::pair<int64_t, int64_t>> kSizes = {{1, 1}, {3, 7}, {17, 5}, {1, 129}};

// Y = running sum of X along `axis` (from the end when `reverse`); exclusive starts at 0.
TensorRef running_sum(const TensorRef& X, size_t axis, bool reverse, bool exclusive) {
  return scan(
      "Y", X->shape(), axis, reverse,
      [&](const Indices& i) {
        tir::Expr x = read(X, {i.begin(), i.end()});
        return exclusive ? tir::make_const(x.type(), 0) : x;
      },
      [&](const Indices& i, tir::Expr prev) {
        std::vector<arith::Expr> at(i.begin(), i.end());
        if (exclusive) at[axis] = reverse ? at[axis] + 1 : at[axis] - 1;
        return prev + read(X, at);
      });
}

std::vector<double> reference(const vm::Tensor& x, int64_t m, int64_t n, size_t axis, bool reverse,
                              bool exclusive) {
  std::vector<double> out(static_cast<size_t>(m * n));
  int64_t len = axis == 0 ? m : n, lines = axis == 0 ? n : m;
  for (int64_t l = 0; l < lines; ++l) {
    double acc = 0;
    for (int64_t s = 0; s < len; ++s) {
      int64_t k = reverse ? len - 1 - s : s;
      int64_t flat = axis == 0 ? k * n + l : l * n + k;
      if (!exclusive) acc += at(x, flat);
      out[static_cast<size_t>(flat)] = acc;
      if (exclusive) acc += at(x, flat);
    }
  }
  return out;
}

TEST(LowerScan, RunningSumAlongEitherAxisForwardAndReverse) {
  arith::Var m("m"), n("n");
  std::mt19937 rng(21);
  for (size_t axis : {0u, 1u}) {
    for (bool reverse : {false, true}) {
      for (bool exclusive : {false, true}) {
        auto X = placeholder("X", {m, n}, kF32);
        TensorRef Y = running_sum(X, axis, reverse, exclusive);
        Schedule s = create_schedule({Y});
        // The other axis: parallel when it is the outer one, else vectorized (which falls
        // back to a serial loop: the body reads the buffer it writes).
        if (axis == 1) {
          s[Y].parallel(s[Y].axis(0));
        } else {
          auto [jo, ji] = s[Y].split(s[Y].axis(1), 4);
          s[Y].vectorize(ji);
        }
        tir::PrimFunc f = lower_checked(s, {X, Y}, "cumsum");
        for (auto [rows, cols] : kSizes) {
          vm::Tensor x = random_f32({rows, cols}, rng), y = poisoned({rows, cols}, kF32);
          run(f, {x, y});
          expect_values(y, reference(x, rows, cols, axis, reverse, exclusive), 1e-5,
                        "axis " + std::to_string(axis) + (reverse ? " reverse" : "") +
                            (exclusive ? " exclusive " : " ") + shape_name({rows, cols}));
        }
      }
    }
  }
}

TEST(LowerScan, OneStorePerElementNoReduction) {
  arith::Var n("n");
  auto X = placeholder("X", {n}, kI64);
  TensorRef Y = running_sum(X, 0, false, false);
  Schedule s = create_schedule({Y});
  tir::PrimFunc f = lower_checked(s, {X, Y}, "cumsum1d");
  EXPECT_EQ(stmts_of(f, tir::StmtKind::kFor).size(), 1u) << tir::to_string(f);
  EXPECT_EQ(stmts_of(f, tir::StmtKind::kStore).size(), 2u) << tir::to_string(f);  // if / else
  vm::Tensor x = vm::Tensor::from_vector(std::vector<int64_t>{3, -1, 4, 1, -5}, {5}, kI64);
  vm::Tensor y = poisoned({5}, kI64);
  run(f, {x, y});
  expect_values(y, {3, 2, 6, 7, 2}, 0, "i64 running sum");
}

TEST(LowerScan, SchedulesThatBreakTheRecurrenceAreRefused) {
  arith::Var m("m"), n("n");
  auto X = placeholder("X", {m, n}, kF32);
  TensorRef Y = running_sum(X, 1, false, false);
  {
    Schedule s = create_schedule({Y});
    EXPECT_USER_ERROR(s[Y].parallel(s[Y].axis(1)), "scan axis");
  }
  {
    Schedule s = create_schedule({Y});
    s[Y].split(s[Y].axis(1), 4);
    EXPECT_USER_ERROR(lower(s, {X, Y}, "split"), "split or fused");
  }
  {
    Schedule s = create_schedule({Y});
    EXPECT_USER_ERROR(s.cache_write(Y, "local"), "scan");
  }
  {
    auto Z = compute("Z", {m, n}, [&](const Indices& i) { return read(Y, {i[0], i[1]}); });
    Schedule s = create_schedule({Z});
    EXPECT_USER_ERROR(s[Y].compute_inline(), "is a scan");
    EXPECT_USER_ERROR(s[Y].compute_at(s[Z], s[Z].axis(0)), "is a scan");
  }
  EXPECT_USER_ERROR(running_sum(X, 2, false, false), "out of range");
}

}  // namespace
}  // namespace dynvm::te
