// GridSample compiled for the host with symbolic N, C, H, W and grid dims (one kernel per
// mode, padding and align_corners) and run on PyTorch's outputs (fixtures/
// make_grid_sample_fixtures.py: torch.nn.functional.grid_sample, whose semantics ONNX
// GridSample-16 takes over): bilinear, nearest, bicubic x zeros, border, reflection x
// align_corners 0 / 1, coordinates beyond [-1, 1] and exact corners.
#include "kernels/ops/grid_sample.h"

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"
#include "vm/npy.h"

namespace dynvm::ops::testing {
namespace {

const char* const kModes[] = {"bilinear", "nearest", "bicubic"};
const char* const kPaddings[] = {"zeros", "border", "reflection"};

std::string case_name(const char* mode, const char* padding, int align) {
  return std::string(mode) + "_" + padding + "_" + std::to_string(align);
}

std::string fixture(const std::string& name) {
  return std::string(DYNVM_OPS_FIXTURES) + "/grid_sample_" + name + ".npy";
}

class GridSample : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var n("n"), c("c"), h("h"), w("w"), ho("ho"), wo("wo");
    std::vector<OpToBuild> ops;
    for (const char* mode : kModes) {
      for (const char* padding : kPaddings) {
        for (int align = 0; align < 2; ++align) {
          ops.push_back({case_name(mode, padding, align),
                         grid_sample({kF32, {n, c, h, w}}, {kF32, {n, ho, wo, arith::Expr(2)}},
                                     grid_sample_mode(mode), grid_padding(padding), align != 0)});
        }
      }
    }
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* GridSample::lib_ = nullptr;

TEST_F(GridSample, MatchesPyTorchForEveryModePaddingAndAlignment) {
  vm::Tensor x = vm::read_npy(fixture("x"));
  vm::Tensor grid = vm::read_npy(fixture("grid"));
  for (const char* mode : kModes) {
    for (const char* padding : kPaddings) {
      for (int align = 0; align < 2; ++align) {
        const std::string name = case_name(mode, padding, align);
        vm::Tensor want = vm::read_npy(fixture(name));
        vm::Tensor y = run_op(*lib_, name, {x, grid}, want.shape(), kF32);
        // f32 math in both; the order of the weighted sums differs.
        expect_close(y, values(want), 1e-5, 1e-5, name);
      }
    }
  }
}

TEST(GridSampleBuilder, RejectsBadShapesAndNames) {
  arith::Var n("n");
  EXPECT_USER_ERROR(grid_sample({kF32, {n, n, n}}, {kF32, {n, n, n, arith::Expr(2)}},
                                GridSampleMode::kBilinear, GridPadding::kZeros, false),
                    "4-D");
  EXPECT_USER_ERROR(grid_sample({kI64, {n, n, n, n}}, {kI64, {n, n, n, arith::Expr(2)}},
                                GridSampleMode::kBilinear, GridPadding::kZeros, false),
                    "float");
  EXPECT_USER_ERROR(grid_sample_mode("area"), "unknown mode");
  EXPECT_USER_ERROR(grid_padding("wrap"), "unknown padding_mode");
}

}  // namespace
}  // namespace dynvm::ops::testing
