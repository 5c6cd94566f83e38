// Einsum compiled for the host: batch matmul with symbolic dims, a trace and a batch
// diagonal (repeated letters), a transpose and row sums, the implicit output form, "..."
// broadcasting a dim of 1, and i64 data. References are plain loops; the parser's errors.
#include "kernels/ops/einsum.h"

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

class Einsum : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var b("b"), m("m"), k("k"), n("n");
    std::vector<OpToBuild> ops;
    ops.push_back({"bmm", einsum({{kF64, {b, m, k}}, {kF64, {b, k, n}}}, "bij, bjk -> bik")});
    ops.push_back({"trace", einsum({{kF32, {n, n}}}, "ii")});
    ops.push_back({"batch_diagonal", einsum({{kF32, {b, n, n}}}, "...ii ->...i")});
    ops.push_back({"implicit_transpose", einsum({{kI64, {m, n}}}, "ji")});
    ops.push_back({"row_sums", einsum({{kF32, {m, n}}}, "ij->i")});
    ops.push_back({"broadcast",
                   einsum({{kF32, {arith::Expr(1), m, k}}, {kF32, {b, k}}}, "...ij,...j->...i")});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Einsum::lib_ = nullptr;

TEST_F(Einsum, BatchMatmulAtSeveralSizes) {
  std::mt19937 rng(5);
  for (auto [b, m, k, n] : std::vector<std::array<int64_t, 4>>{{2, 3, 4, 5}, {1, 1, 7, 2}}) {
    vm::Tensor x = random_tensor({b, m, k}, kF64, rng, -1, 1);
    vm::Tensor y = random_tensor({b, k, n}, kF64, rng, -1, 1);
    std::vector<double> want(static_cast<size_t>(b * m * n), 0);
    for (int64_t p = 0; p < b; ++p) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t r = 0; r < k; ++r) {
            want[static_cast<size_t>((p * m + i) * n + j)] +=
                at(x, (p * m + i) * k + r) * at(y, (p * k + r) * n + j);
          }
        }
      }
    }
    expect_close(run_op(*lib_, "bmm", {x, y}, {b, m, n}, kF64), want, 1e-12, 1e-12, "bmm");
  }
}

TEST_F(Einsum, RepeatedLettersReadTheDiagonal) {
  vm::Tensor sq =
      vm::Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, kF32);
  expect_close(run_op(*lib_, "trace", {sq}, {}, kF32), {15}, 0, 0, "trace");
  vm::Tensor batch =
      vm::Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}, kF32);
  expect_close(run_op(*lib_, "batch_diagonal", {batch}, {2, 2}, kF32), {1, 4, 5, 8}, 0, 0,
               "batch diagonal");
}

TEST_F(Einsum, TransposeSumsAndBroadcasting) {
  vm::Tensor a = vm::Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3}, kI64);
  // "ji" implicitly outputs "ij": the transpose.
  expect_close(run_op(*lib_, "implicit_transpose", {a}, {3, 2}, kI64), {1, 4, 2, 5, 3, 6}, 0, 0,
               "transpose");
  vm::Tensor f = vm::Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, kF32);
  expect_close(run_op(*lib_, "row_sums", {f}, {2}, kF32), {6, 15}, 0, 0, "row sums");
  // [1, 2, 3] matrices times [2, 3] vectors: the matrix broadcasts over the batch of 2.
  vm::Tensor v = vm::Tensor::from_vector(std::vector<float>{1, 0, 1, 0, 1, 0}, {2, 3}, kF32);
  expect_close(run_op(*lib_, "broadcast", {f.reshape_view({1, 2, 3}), v}, {2, 2}, kF32),
               {4, 10, 2, 5}, 0, 0, "broadcast");
}

TEST(EinsumParser, LabelsAndErrors) {
  EinsumLabels l = parse_einsum("ij,jk", {2, 2});
  EXPECT_EQ(l.output, (std::vector<int>{'i' - 'a', 'k' - 'a'}));
  l = parse_einsum("...i->i", {3});
  EXPECT_EQ(l.inputs[0], (std::vector<int>{52, 53, 'i' - 'a'}));
  EXPECT_USER_ERROR(parse_einsum("ij,jk->ik", {2}), "operands");
  EXPECT_USER_ERROR(parse_einsum("ij->ik", {2}), "in no input");
  EXPECT_USER_ERROR(parse_einsum("ijk", {2}), "rank");
  EXPECT_USER_ERROR(parse_einsum("i1", {2}), "unexpected character");
}

}  // namespace
}  // namespace dynvm::ops::testing
