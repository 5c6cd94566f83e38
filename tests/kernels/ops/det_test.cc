// Det compiled for the host with a symbolic batch and M (one kernel at M = 1..5) and a
// static 2 x 2: random matrices against a Laplace (cofactor) expansion in double, matrices
// that need row swaps (a zero leading entry), singular ones, and f64.
#include "kernels/ops/det.h"

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

class Det : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var b("b"), m("m");
    std::vector<OpToBuild> ops;
    ops.push_back({"batched_f32", det({kF32, {b, m, m}})});
    ops.push_back({"static_f64", det({kF64, {arith::Expr(2), arith::Expr(2)}})});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Det::lib_ = nullptr;

// The determinant of the n x n matrix a (row-major) by expansion along the first row.
double laplace(const std::vector<double>& a, int64_t n) {
  if (n == 1) return a[0];
  double sum = 0;
  for (int64_t col = 0; col < n; ++col) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        if (c != col) minor.push_back(a[static_cast<size_t>(r * n + c)]);
      }
    }
    sum += (col % 2 == 0 ? 1 : -1) * a[static_cast<size_t>(col)] * laplace(minor, n - 1);
  }
  return sum;
}

TEST_F(Det, RandomMatricesMatchTheCofactorExpansion) {
  std::mt19937 rng(3);
  for (int64_t m = 1; m <= 5; ++m) {
    const int64_t b = 3;
    vm::Tensor x = random_tensor({b, m, m}, kF32, rng, -2, 2);
    std::vector<double> want;
    for (int64_t k = 0; k < b; ++k) {
      std::vector<double> a;
      for (int64_t i = 0; i < m * m; ++i) a.push_back(at(x, k * m * m + i));
      want.push_back(laplace(a, m));
    }
    expect_close(run_op(*lib_, "batched_f32", {x}, {b}, kF32), want, 1e-4, 1e-4,
                 "m=" + std::to_string(m));
  }
}

TEST_F(Det, RowSwapsAndSingularMatrices) {
  // [[0, 1], [1, 0]] needs a swap: -1. [[0, 2, 1], [0, 1, 3], [4, 5, 6]]: 4 * (2*3 - 1*1) = 20.
  // A zero column and two equal rows: 0.
  vm::Tensor x = vm::Tensor::from_vector(std::vector<float>{0, 1, 0, 0, 0, 0, 0, 0, 0,  //
                                                            0, 2, 1, 0, 1, 3, 4, 5, 6,  //
                                                            0, 1, 2, 0, 3, 4, 0, 5, 6,  //
                                                            1, 2, 3, 1, 2, 3, 7, 8, 9},
                                         {4, 3, 3}, kF32);
  // The first matrix as 3 x 3: [[0, 1, 0], [0, 0, 0], [0, 0, 0]] is singular too.
  expect_close(run_op(*lib_, "batched_f32", {x}, {4}, kF32), {0, 20, 0, 0}, 0, 1e-5, "3x3");
  vm::Tensor swap = vm::Tensor::from_vector(std::vector<float>{0, 1, 1, 0}, {1, 2, 2}, kF32);
  expect_close(run_op(*lib_, "batched_f32", {swap}, {1}, kF32), {-1}, 0, 0, "swap");
  vm::Tensor d = vm::Tensor::from_vector(std::vector<double>{3, 8, 4, 6}, {2, 2}, kF64);
  expect_close(run_op(*lib_, "static_f64", {d}, {}, kF64), {-14}, 1e-15, 0, "f64");
}

TEST(DetBuilder, RejectsNonSquareAndIntegerInputs) {
  arith::Var m("m"), n("n");
  EXPECT_USER_ERROR(det({kF32, {m, n}}), "square");
  EXPECT_USER_ERROR(det({kI64, {m, m}}), "f32 or f64");
  EXPECT_USER_ERROR(det({kF32, {m}}), "rank >= 2");
}

}  // namespace
}  // namespace dynvm::ops::testing
