// OneHot compiled for the host: depth a symbol bound from the output (one kernel at several
// depths) and a constant, the new axis first, in the middle and last, int64 / int32 / f32
// indices, negative ones counting from the end and ones beyond [-depth, depth) giving a row
// of off values. References are written out by hand or by a plain loop.
#include "kernels/ops/one_hot.h"

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

class OneHot : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), d("d");
    std::vector<OpToBuild> ops;
    ops.push_back({"last_i64", one_hot({kI64, {n}}, {kF32, {arith::Expr(2)}}, -1, d)});
    ops.push_back({"middle_f32", one_hot({kF32, {m, n}}, {kI64, {arith::Expr(2)}}, 1, d)});
    ops.push_back(
        {"first_i32_depth3", one_hot({kI32, {n}}, {kF32, {arith::Expr(2)}}, -2, arith::Expr(3))});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* OneHot::lib_ = nullptr;

TEST_F(OneHot, LastAxisWrapsNegativeIndicesAndLeavesOutOfRangeRowsOff) {
  // depth 4: 1 -> column 1, -1 -> 3, -4 -> 0, 4 and -5 are outside: all off.
  vm::Tensor idx = vm::Tensor::from_vector(std::vector<int64_t>{1, -1, -4, 4, -5}, {5}, kI64);
  vm::Tensor values = vm::Tensor::from_vector(std::vector<float>{-2, 7}, {2}, kF32);
  vm::Tensor y = run_op(*lib_, "last_i64", {idx, values}, {5, 4}, kF32);
  expect_close(y, {-2, 7, -2, -2, -2, -2, -2, 7, 7, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2}, 0,
               0, "depth 4");
  // The same kernel at depth 2: 1 -> 1, -1 -> 1, the rest outside.
  vm::Tensor y2 = run_op(*lib_, "last_i64", {idx, values}, {5, 2}, kF32);
  expect_close(y2, {-2, 7, -2, 7, -2, -2, -2, -2, -2, -2}, 0, 0, "depth 2");
}

TEST_F(OneHot, MiddleAxisFromFloatIndices) {
  // indices [[1.9, -1], [0, 2]] (1.9 truncates to 1), depth 3, axis 1: y[i, k, j].
  vm::Tensor idx = vm::Tensor::from_vector(std::vector<float>{1.9f, -1, 0, 2}, {2, 2}, kF32);
  vm::Tensor values = vm::Tensor::from_vector(std::vector<int64_t>{0, 5}, {2}, kI64);
  vm::Tensor y = run_op(*lib_, "middle_f32", {idx, values}, {2, 3, 2}, kI64);
  std::vector<double> want(12, 0);
  const int64_t hot[2][2] = {{1, 2}, {0, 2}};
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) want[static_cast<size_t>(i * 6 + hot[i][j] * 2 + j)] = 5;
  }
  expect_close(y, want, 0, 0, "axis 1");
}

TEST_F(OneHot, FirstAxisWithConstantDepth) {
  vm::Tensor idx = vm::Tensor::from_vector(std::vector<int32_t>{2, 0}, {2}, kI32);
  vm::Tensor values = vm::Tensor::from_vector(std::vector<float>{0, 1}, {2}, kF32);
  vm::Tensor y = run_op(*lib_, "first_i32_depth3", {idx, values}, {3, 2}, kF32);
  expect_close(y, {0, 1, 0, 0, 1, 0}, 0, 0, "axis 0");
}

TEST(OneHotBuilder, RejectsBoolIndicesAndBadAxes) {
  arith::Var n("n");
  const TensorType pair{kF32, {arith::Expr(2)}};
  EXPECT_USER_ERROR(one_hot({kBool, {n}}, pair, 0, arith::Expr(3)), "bool");
  EXPECT_USER_ERROR(one_hot({kI64, {n}}, pair, 2, arith::Expr(3)), "axis");
  EXPECT_USER_ERROR(one_hot({kI64, {n}}, {kF32, {arith::Expr(3)}}, 0, arith::Expr(3)),
                    "two elements");
}

}  // namespace
}  // namespace dynvm::ops::testing
