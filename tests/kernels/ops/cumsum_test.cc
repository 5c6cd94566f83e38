// CumSum compiled for the host and run through the runtime's loader: every axis of a
// symbolic [m, n, k] tensor (one kernel called at several sizes), exclusive and reverse in
// all four combinations, i64 data (exact), a static shape, rank 1 and the serial schedule.
// References are plain running sums in double.
#include "kernels/ops/cumsum.h"

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

std::string symbol(const std::string& prefix, int64_t axis, bool exclusive, bool reverse) {
  std::string a = axis < 0 ? "last" : std::to_string(axis);
  return prefix + "_axis" + a + (exclusive ? "_excl" : "") + (reverse ? "_rev" : "");
}

// Running sums of x along `axis` (shape s), walking from the end when `reverse`; an
// exclusive sum leaves the current element out.
std::vector<double> reference(const vm::Tensor& x, const vm::Shape& s, size_t axis, bool exclusive,
                              bool reverse) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  int64_t len = s[axis], outer = numel(s) / std::max<int64_t>(len * inner, 1);
  std::vector<double> out(static_cast<size_t>(numel(s)));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      double acc = 0;
      for (int64_t step = 0; step < len; ++step) {
        int64_t k = reverse ? len - 1 - step : step;
        int64_t flat = (o * len + k) * inner + in;
        double v = at(x, flat);
        if (!exclusive) acc += v;
        out[static_cast<size_t>(flat)] = acc;
        if (exclusive) acc += v;
      }
    }
  }
  return out;
}

class CumSum : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), k("k");
    std::vector<OpToBuild> ops;
    for (int64_t axis : {0, 1, -1}) {
      for (bool exclusive : {false, true}) {
        for (bool reverse : {false, true}) {
          ops.push_back({symbol("f32", axis, exclusive, reverse),
                         cumsum({kF32, {m, n, k}}, axis, exclusive, reverse)});
        }
      }
    }
    ops.push_back({symbol("i64", 1, true, true), cumsum({kI64, {m, n, k}}, 1, true, true)});
    ops.push_back({symbol("i64", 0, false, false), cumsum({kI64, {m, n, k}}, 0, false, false)});
    ops.push_back(
        {symbol("static", 1, false, true), cumsum({kF32, dims({3, 17, 7})}, 1, false, true)});
    ops.push_back({symbol("rank1", 0, true, false), cumsum({kF32, {n}}, 0, true, false)});
    ops.push_back({symbol("serial", 2, false, false),
                   cumsum({kF32, {m, n, k}}, 2, false, false),
                   {{"parallel", 0}}});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* CumSum::lib_ = nullptr;

void check(const OpLibrary& lib, const std::string& prefix, vm::DType dtype, const vm::Shape& s,
           int64_t axis, bool exclusive, bool reverse, std::mt19937& rng, bool parallel = true) {
  double range = dtype == kF32 ? 1 : 1000;
  vm::Tensor x = random_tensor(s, dtype, rng, -range, range);
  std::string name = symbol(prefix, axis, exclusive, reverse);
  vm::Tensor y = run_op(lib, name, {x}, s, dtype, parallel);
  size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis);
  // f32 sums of up to 129 values in [-1, 1].
  double tol = dtype == kF32 ? 1e-4 : 0;
  expect_close(y, reference(x, s, a, exclusive, reverse), tol, tol, name + " " + shape_name(s));
}

TEST_F(CumSum, EveryAxisExclusiveAndReverseOnSymbolicShapes) {
  std::mt19937 rng(41);
  const std::vector<vm::Shape> shapes = {
      {1, 1, 1}, {3, 7, 17}, {2, 129, 3}, {1, 1, 129}, {17, 3, 1}};
  for (const vm::Shape& s : shapes) {
    for (int64_t axis : {0, 1, -1}) {
      for (bool exclusive : {false, true}) {
        for (bool reverse : {false, true})
          check(*lib_, "f32", kF32, s, axis, exclusive, reverse, rng);
      }
    }
  }
}

TEST_F(CumSum, IntegerStaticRankOneAndSerialSchedule) {
  std::mt19937 rng(42);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 1}, {3, 7, 17}, {7, 129, 3}}) {
    check(*lib_, "i64", kI64, s, 1, true, true, rng);
    check(*lib_, "i64", kI64, s, 0, false, false, rng);
    check(*lib_, "serial", kF32, s, 2, false, false, rng, false);
  }
  check(*lib_, "static", kF32, {3, 17, 7}, 1, false, true, rng);
  for (int64_t n : {1, 3, 7, 17, 129}) check(*lib_, "rank1", kF32, {n}, 0, true, false, rng);
}

TEST(CumSumBuilder, RejectsBadAxisAndTypes) {
  arith::Var n("n");
  EXPECT_USER_ERROR(cumsum({kF32, {n, n}}, 2), "axis 2 is out of range");
  EXPECT_USER_ERROR(cumsum({kF32, {n, n}}, -3), "out of range");
  EXPECT_USER_ERROR(cumsum({kF32, {}}, 0), "rank >= 1");
  EXPECT_USER_ERROR(cumsum({kBool, {n}}, 0), "numeric");
}

}  // namespace
}  // namespace dynvm::ops::testing
