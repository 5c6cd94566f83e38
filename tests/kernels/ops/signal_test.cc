// DFT, STFT and MelWeightMatrix compiled for the host: a real forward DFT over a symbolic
// [m, n, 1] signal, a complex inverse DFT, dft_length padding and truncating (read at run
// time, the output's extent bound from the output), STFT with a window and with a
// frame_length, and the mel matrix of the ONNX node test. References are plain loops in
// double.
#include "kernels/ops/signal.h"

#include <cmath>

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

constexpr double kPi = 3.14159265358979323846;

// DFT of rows x[r][j] (complex, length n, padded / truncated to `len`) with `bins` outputs.
std::vector<double> dft_reference(const vm::Tensor& x, int64_t rows, int64_t n, bool complex,
                                  int64_t len, int64_t bins, bool inverse) {
  std::vector<double> out;
  const int64_t c = complex ? 2 : 1;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < bins; ++k) {
      double re = 0, im = 0;
      for (int64_t j = 0; j < std::min(n, len); ++j) {
        double a = at(x, (r * n + j) * c), b = complex ? at(x, (r * n + j) * c + 1) : 0;
        double t = 2 * kPi * static_cast<double>(k * j) / static_cast<double>(len);
        double s = inverse ? -1 : 1;
        re += a * std::cos(t) + s * b * std::sin(t);
        im += b * std::cos(t) - s * a * std::sin(t);
      }
      if (inverse) re /= static_cast<double>(len), im /= static_cast<double>(len);
      out.push_back(re);
      out.push_back(im);
    }
  }
  return out;
}

class Signal : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), bins("bins"), frames("frames");
    const TensorType i64_scalar{kI64, {}};
    std::vector<OpToBuild> ops;
    ops.push_back({"dft_real", dft({kF32, {m, n, 1}}, nullptr, 1, false, {m, n, 2})});
    ops.push_back({"idft_complex", dft({kF32, {m, n, 2}}, nullptr, 1, true, {m, n, 2})});
    ops.push_back({"dft_length", dft({kF32, {m, n, 1}}, &i64_scalar, 1, false, {m, bins, 2})});
    const TensorType window{kF32, {16}};
    ops.push_back(
        {"stft_window", stft({kF32, {1, n, 1}}, i64_scalar, &window, nullptr, {1, frames, 9, 2})});
    ops.push_back({"stft_length", stft({kF32, {1, n, 2}}, i64_scalar, nullptr, &i64_scalar,
                                       {1, frames, bins, 2})});
    const TensorType i32_scalar{kI32, {}}, f32_scalar{kF32, {}};
    ops.push_back(
        {"mel", mel_weight_matrix({i32_scalar, i32_scalar, i32_scalar, f32_scalar, f32_scalar},
                                  kF32, {bins, m})});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Signal::lib_ = nullptr;

vm::Tensor scalar(int64_t v) { return vm::Tensor::from_vector(std::vector<int64_t>{v}, {}, kI64); }

TEST_F(Signal, DftForwardInverseAndLength) {
  std::mt19937 rng(7);
  for (int64_t n : {1, 7, 16, 33}) {
    vm::Tensor x = random_tensor({3, n, 1}, kF32, rng, -1, 1);
    vm::Tensor y = run_op(*lib_, "dft_real", {x}, {3, n, 2}, kF32);
    expect_close(y, dft_reference(x, 3, n, false, n, n, false), 1e-5, 1e-5, "dft_real");
    vm::Tensor z = random_tensor({3, n, 2}, kF32, rng, -1, 1);
    vm::Tensor w = run_op(*lib_, "idft_complex", {z}, {3, n, 2}, kF32);
    expect_close(w, dft_reference(z, 3, n, true, n, n, true), 1e-5, 1e-5, "idft_complex");
    for (int64_t len : {n / 2 + 1, n + 5}) {  // truncated, zero-padded
      vm::Tensor v = run_op(*lib_, "dft_length", {x, scalar(len)}, {3, len, 2}, kF32);
      expect_close(v, dft_reference(x, 3, n, false, len, len, false), 1e-5, 1e-5, "dft_length");
    }
  }
}

// STFT frames of x [1, n, c] with `step`, frame length `len`, window w (empty: ones).
std::vector<double> stft_reference(const vm::Tensor& x, int64_t n, bool complex, int64_t step,
                                   int64_t len, const std::vector<double>& w, int64_t bins) {
  std::vector<double> out;
  const int64_t frames = (n - len) / step + 1, c = complex ? 2 : 1;
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t k = 0; k < bins; ++k) {
      double re = 0, im = 0;
      for (int64_t j = 0; j < len; ++j) {
        const int64_t p = f * step + j;
        double g = w.empty() ? 1 : w[static_cast<size_t>(j)];
        double a = at(x, p * c) * g, b = complex ? at(x, p * c + 1) * g : 0;
        double t = 2 * kPi * static_cast<double>(k * j) / static_cast<double>(len);
        re += a * std::cos(t) + b * std::sin(t);
        im += b * std::cos(t) - a * std::sin(t);
      }
      out.push_back(re);
      out.push_back(im);
    }
  }
  return out;
}

TEST_F(Signal, StftWithWindowAndWithFrameLength) {
  std::mt19937 rng(8);
  vm::Tensor x = random_tensor({1, 70, 1}, kF32, rng, -1, 1);
  vm::Tensor w = random_tensor({16}, kF32, rng, 0, 1);
  for (int64_t step : {3, 8}) {
    const int64_t frames = (70 - 16) / step + 1;
    vm::Tensor y = run_op(*lib_, "stft_window", {x, scalar(step), w}, {1, frames, 9, 2}, kF32);
    expect_close(y, stft_reference(x, 70, false, step, 16, values(w), 9), 1e-5, 1e-5,
                 "stft_window");
  }
  vm::Tensor z = random_tensor({1, 40, 2}, kF32, rng, -1, 1);
  const int64_t len = 10, step = 4, frames = (40 - len) / step + 1;
  vm::Tensor y =
      run_op(*lib_, "stft_length", {z, scalar(step), scalar(len)}, {1, frames, len, 2}, kF32);
  expect_close(y, stft_reference(z, 40, true, step, len, {}, len), 1e-5, 1e-5, "stft_length");
}

TEST_F(Signal, MelWeightMatrixOfTheOnnxNodeTest) {
  auto i32 = [](int32_t v) { return vm::Tensor::from_vector(std::vector<int32_t>{v}, {}, kI32); };
  auto f32 = [](float v) { return vm::Tensor::from_vector(std::vector<float>{v}, {}, kF32); };
  vm::Tensor y =
      run_op(*lib_, "mel", {i32(8), i32(16), i32(8192), f32(0), f32(4096)}, {9, 8}, kF32);
  // The ONNX node test's expected output (onnx/backend/test/case/node/melweightmatrix.py).
  std::vector<double> want(72, 0.0);
  for (auto [r, c] : std::vector<std::pair<int, int>>{
           {0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}}) {
    want[static_cast<size_t>(r * 8 + c)] = 1;
  }
  expect_close(y, want, 0, 1e-6, "mel");
}

TEST(SignalBuilder, RejectsBadShapes) {
  arith::Var n("n");
  EXPECT_USER_ERROR(dft({kF32, {n, 3}}, nullptr, 0, false, {n, 2}), "last dim must be 1");
  EXPECT_USER_ERROR(dft({kI64, {n, 1}}, nullptr, 0, false, {n, 2}), "f32 or f64");
  EXPECT_USER_ERROR(dft({kF32, {n, 1}}, nullptr, 1, false, {n, 2}), "not a signal axis");
  EXPECT_USER_ERROR(stft({kF32, {1, n, 1}}, {kI64, {}}, nullptr, nullptr, {1, n, n, 2}),
                    "needs a window or a frame_length");
}

}  // namespace
}  // namespace dynvm::ops::testing
