// Scatters and data-sized outputs compiled for the host: ScatterElements / ScatterND with
// every reduction (duplicates combine, negative indices count from the end, indices still
// out of range write nothing), NonZero and Compress with the count as a symbol bound from
// the output, count_nonzero. References are plain loops over the inputs.
#include "kernels/ops/scatter.h"

#include "kernels/ops/nonzero.h"
#include "kernels/ops/unique.h"
#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

class Scatter : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), p("p"), c("c");
    std::vector<OpToBuild> ops;
    ops.push_back(
        {"elements_axis1_add", scatter_elements({kF32, {m, n}}, {kI64, {m, p}}, {kF32, {m, p}}, 1,
                                                ScatterReduction::kAdd)});
    ops.push_back({"elements_axis0_none_i32",
                   scatter_elements({kI64, {m, n}}, {kI32, {p, n}}, {kI64, {p, n}}, 0)});
    ops.push_back(
        {"elements_axis1_max", scatter_elements({kF32, {m, n}}, {kI64, {m, p}}, {kF32, {m, p}}, -1,
                                                ScatterReduction::kMax)});
    ops.push_back({"nd_k1_mul", scatter_nd({kF32, {m, n}}, {kI64, {p, 1}}, {kF32, {p, n}},
                                           ScatterReduction::kMul)});
    ops.push_back({"nd_k2_none", scatter_nd({kF32, {m, n}}, {kI64, {p, 2}}, {kF32, {p}})});
    ops.push_back({"count_f32", count_nonzero({kF32, {m, n, p}})});
    ops.push_back({"nonzero_f32", nonzero({kF32, {m, n, p}}, c)});
    ops.push_back({"nonzero_bool", nonzero({kBool, {n}}, c)});
    ops.push_back({"compress_axis1", compress({kF32, {m, n}}, {kBool, {p}}, c, true, 1)});
    ops.push_back({"compress_flat", compress({kF32, {m, n}}, {kBool, {p}}, c, false, 0)});
    ops.push_back({"unique_count_sorted", unique_count({kF32, {n}}, {})});
    ops.push_back({"unique_sorted", unique({kF32, {n}}, {}, c, 4)});
    ops.push_back({"unique_first_seen", unique({kF32, {n}}, {false, 0, false}, c, 4)});
    ops.push_back({"unique_count_rows", unique_count({kI64, {m, n}}, {true, 0, true})});
    ops.push_back({"unique_rows", unique({kI64, {m, n}}, {true, 0, true}, c, 3)});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Scatter::lib_ = nullptr;

vm::Tensor f32(const std::vector<float>& v, const vm::Shape& s) {
  return vm::Tensor::from_vector(v, s, kF32);
}
vm::Tensor i64(const std::vector<int64_t>& v, const vm::Shape& s) {
  return vm::Tensor::from_vector(v, s, kI64);
}

TEST_F(Scatter, ElementsAddCombinesDuplicatesAndSkipsOutOfRange) {
  // data 2x4; row 0 adds 1 and 2 at column 1 (twice), 4 at -1 = column 3; row 1 adds at 0,
  // and an index 4 (out of range) and -5 write nothing.
  vm::Tensor data = f32({0, 0, 0, 0, 10, 10, 10, 10}, {2, 4});
  vm::Tensor idx = i64({1, 1, -1, 0, 4, -5}, {2, 3});
  vm::Tensor upd = f32({1, 2, 4, 5, 6, 7}, {2, 3});
  vm::Tensor y = run_op(*lib_, "elements_axis1_add", {data, idx, upd}, {2, 4}, kF32);
  expect_close(y, {0, 3, 0, 4, 15, 10, 10, 10}, 0, 0, "add");
  vm::Tensor ymax = run_op(*lib_, "elements_axis1_max", {data, idx, upd}, {2, 4}, kF32);
  expect_close(ymax, {0, 2, 0, 4, 10, 10, 10, 10}, 0, 0, "max");
}

TEST_F(Scatter, ElementsNoneLastUpdateWinsAlongAxis0) {
  vm::Tensor data = i64({1, 2, 3, 4, 5, 6}, {3, 2});
  vm::Tensor idx = vm::Tensor::from_vector(std::vector<int32_t>{2, 0, 2, -3}, {2, 2}, kI32);
  vm::Tensor upd = i64({7, 8, 9, 10}, {2, 2});
  vm::Tensor y = run_op(*lib_, "elements_axis0_none_i32", {data, idx, upd}, {3, 2}, kI64);
  // (0,0)<-7 at row 2; (0,1)<-8 at row 0; (1,0)<-9 at row 2 (last wins); (1,1)<-10 at row 0.
  expect_close(y, {1, 10, 3, 4, 9, 6}, 0, 0, "none");
}

TEST_F(Scatter, NdRowsAndElements) {
  vm::Tensor data = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  // Rows 2 and -1 (= 2 again: the products combine) and 0.
  vm::Tensor rows = i64({2, -1, 0}, {3, 1});
  vm::Tensor upd = f32({2, 3, 4, 5, 10, 10}, {3, 2});
  vm::Tensor y = run_op(*lib_, "nd_k1_mul", {data, rows, upd}, {3, 2}, kF32);
  expect_close(y, {10, 20, 3, 4, 40, 90}, 0, 0, "mul");
  vm::Tensor at = i64({0, 1, 2, 0, 5, 5}, {3, 2});  // the last is out of range
  vm::Tensor y2 = run_op(*lib_, "nd_k2_none", {data, at, f32({-1, -2, -3}, {3})}, {3, 2}, kF32);
  expect_close(y2, {1, -1, 3, 4, -2, 6}, 0, 0, "none");
}

TEST_F(Scatter, NonZeroCountsAndListsCoordinatesInRowMajorOrder) {
  std::mt19937 rng(41);
  for (const vm::Shape& s : std::vector<vm::Shape>{{2, 3, 4}, {1, 1, 1}, {5, 1, 17}, {3, 0, 2}}) {
    vm::Tensor x = random_tensor(s, kF32, rng, -1, 1);
    auto* v = static_cast<float*>(x.data());
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (i % 3 != 1) v[i] = 0;  // two thirds zero
    }
    std::vector<double> coords[3];
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (v[i] == 0) continue;
      std::vector<int64_t> c = unravel(i, s);
      for (size_t d = 0; d < 3; ++d) coords[d].push_back(static_cast<double>(c[d]));
    }
    const auto count = static_cast<int64_t>(coords[0].size());
    vm::Tensor n = run_op(*lib_, "count_f32", {x}, {}, kI64);
    expect_close(n, {static_cast<double>(count)}, 0, 0, "count " + shape_name(s));
    vm::Tensor y = run_op(*lib_, "nonzero_f32", {x}, {3, count}, kI64);
    std::vector<double> want;
    for (const auto& c : coords) want.insert(want.end(), c.begin(), c.end());
    expect_close(y, want, 0, 0, "nonzero " + shape_name(s));
  }
  vm::Tensor b = vm::Tensor::from_vector(std::vector<uint8_t>{0, 1, 1, 0, 1}, {5}, kBool);
  expect_close(run_op(*lib_, "nonzero_bool", {b}, {1, 3}, kI64), {1, 2, 4}, 0, 0, "bool");
}

TEST_F(Scatter, CompressAlongAnAxisAndFlattened) {
  vm::Tensor x = f32({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  // Shorter than the axis: the last column is dropped.
  vm::Tensor cond = vm::Tensor::from_vector(std::vector<uint8_t>{1, 0, 1}, {3}, kBool);
  expect_close(run_op(*lib_, "compress_axis1", {x, cond}, {2, 2}, kF32), {1, 3, 5, 7}, 0, 0,
               "axis 1");
  expect_close(run_op(*lib_, "compress_flat", {x, cond}, {2}, kF32), {1, 3}, 0, 0, "flat");
  vm::Tensor none = vm::Tensor::from_vector(std::vector<uint8_t>{0, 0}, {2}, kBool);
  EXPECT_EQ(run_op(*lib_, "compress_axis1", {x, none}, {2, 0}, kF32).numel(), 0);
}

// Kernels with several outputs: runs `symbol` on x and returns the poisoned outputs filled.
std::vector<vm::Tensor> run_outputs(const OpLibrary& lib, const std::string& symbol,
                                    const vm::Tensor& x,
                                    const std::vector<std::pair<vm::Shape, vm::DType>>& outs) {
  std::vector<vm::Tensor> args = {x}, results;
  for (const auto& [shape, dtype] : outs) {
    results.push_back(poisoned(shape, dtype));
    args.push_back(results.back());
  }
  OpResult r = lib.run(symbol, args, true);
  EXPECT_TRUE(r.ok()) << symbol << ": " << r.error;
  return results;
}

TEST_F(Scatter, UniqueSortedAndInOrderOfFirstOccurrence) {
  // numpy.unique([2, 1, 1, 3, 4, 3], return_index, return_inverse, return_counts).
  vm::Tensor x = f32({2, 1, 1, 3, 4, 3}, {6});
  expect_close(run_op(*lib_, "unique_count_sorted", {x}, {}, kI64), {4}, 0, 0, "count");
  auto sorted =
      run_outputs(*lib_, "unique_sorted", x, {{{4}, kF32}, {{4}, kI64}, {{6}, kI64}, {{4}, kI64}});
  expect_close(sorted[0], {1, 2, 3, 4}, 0, 0, "Y");
  expect_close(sorted[1], {1, 0, 3, 4}, 0, 0, "indices");
  expect_close(sorted[2], {1, 0, 0, 2, 3, 2}, 0, 0, "inverse");
  expect_close(sorted[3], {2, 1, 2, 1}, 0, 0, "counts");
  auto seen = run_outputs(*lib_, "unique_first_seen", x,
                          {{{4}, kF32}, {{4}, kI64}, {{6}, kI64}, {{4}, kI64}});
  expect_close(seen[0], {2, 1, 3, 4}, 0, 0, "Y");
  expect_close(seen[1], {0, 1, 3, 4}, 0, 0, "indices");
  expect_close(seen[2], {0, 1, 1, 2, 3, 2}, 0, 0, "inverse");
  expect_close(seen[3], {1, 2, 2, 1}, 0, 0, "counts");
}

TEST_F(Scatter, UniqueRowsSortLexicographically) {
  // Rows [1 0] [0 5] [1 0] [0 2]: distinct, sorted: [0 2] [0 5] [1 0].
  vm::Tensor x = i64({1, 0, 0, 5, 1, 0, 0, 2}, {4, 2});
  expect_close(run_op(*lib_, "unique_count_rows", {x}, {}, kI64), {3}, 0, 0, "count");
  auto out = run_outputs(*lib_, "unique_rows", x, {{{3, 2}, kI64}, {{3}, kI64}, {{4}, kI64}});
  expect_close(out[0], {0, 2, 0, 5, 1, 0}, 0, 0, "Y");
  expect_close(out[1], {3, 1, 0}, 0, 0, "indices");
  expect_close(out[2], {2, 1, 2, 0}, 0, 0, "inverse");
}

TEST(ScatterBuilders, RejectBadTypes) {
  arith::Var m("m");
  EXPECT_USER_ERROR(scatter_elements({kF32, {m}}, {kF32, {m}}, {kF32, {m}}, 0),
                    "indices must be int32 or int64");
  EXPECT_USER_ERROR(scatter_nd({kF32, {m}}, {kI64, {m, m}}, {kF32, {m}}),
                    "last dim must be a constant");
  EXPECT_USER_ERROR(scatter_reduction("sum"), "unknown reduction 'sum'");
  EXPECT_USER_ERROR(compress({kF32, {m}}, {kF32, {m}}, m, false, 0), "one-dimensional bool");
}

}  // namespace
}  // namespace dynvm::ops::testing
