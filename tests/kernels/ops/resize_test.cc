// Resize compiled for the host and run through the runtime's loader. Two kinds of check:
//   * fixtures: inputs and outputs of the ONNX reference implementation (written by
//     fixtures/make_resize_fixtures.py, read with vm/npy.h) for each mode, coordinate
//     transformation and nearest mode, including rounding ties, each run on a static kernel
//     and, where scales are given, on a symbolic one;
//   * random inputs at awkward sizes on symbolic kernels (one kernel, several sizes, empty
//     outputs included) against a plain double re-implementation of the reference, for f32
//     and i64 (exact, linear rounded half to even), rank 1 to 4.
// Bad attributes must be one clear UserError.
#include "kernels/ops/resize.h"

#include <cmath>

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"
#include "vm/npy.h"

namespace dynvm::ops::testing {
namespace {

using CT = CoordinateTransform;

struct Case {
  std::string name;
  vm::Shape in_shape;
  ResizeAttrs attrs;
  bool roi = false;  // tf_crop_and_resize: resize_<name>_roi.npy
};

ResizeAttrs attrs(ResizeMode mode, CT ct, NearestMode nearest, std::vector<float> scales,
                  std::vector<int64_t> sizes = {}) {
  ResizeAttrs a;
  a.mode = mode;
  a.coordinate_transformation_mode = ct;
  a.nearest_mode = nearest;
  a.scales = std::move(scales);
  a.sizes = std::move(sizes);
  return a;
}

ResizeAttrs cubic(ResizeAttrs a, double coeff_a, bool exclude_outside) {
  a.cubic_coeff_a = coeff_a;
  a.exclude_outside = exclude_outside;
  return a;
}

ResizeAttrs extrapolate(ResizeAttrs a, double value) {
  a.extrapolation_value = value;
  return a;
}

constexpr ResizeMode kNearest = ResizeMode::kNearest;
constexpr ResizeMode kLinear = ResizeMode::kLinear;
constexpr ResizeMode kCubic = ResizeMode::kCubic;
constexpr NearestMode kFloorTie = NearestMode::kRoundPreferFloor;
constexpr NearestMode kCeilTie = NearestMode::kRoundPreferCeil;

// Must match CASES in fixtures/make_resize_fixtures.py.
const std::vector<Case> kFixtureCases = {
    {"nearest_half_pixel_up",
     {1, 2, 3, 5},
     attrs(kNearest, CT::kHalfPixel, kFloorTie, {1, 1, 2, 3})},
    {"nearest_asymmetric_floor_down",
     {1, 2, 7, 5},
     attrs(kNearest, CT::kAsymmetric, NearestMode::kFloor, {1, 1, 0.5, 0.5})},
    {"nearest_align_corners_ceil_sizes",
     {1, 2, 3, 5},
     attrs(kNearest, CT::kAlignCorners, kCeilTie, {}, {1, 2, 7, 8})},
    {"nearest_pytorch_ceil",
     {2, 1, 4, 5},
     attrs(kNearest, CT::kPytorchHalfPixel, NearestMode::kCeil, {1, 1, 1.5, 0.6f})},
    {"nearest_half_pixel_odd_scales",
     {1, 1, 7, 17},
     attrs(kNearest, CT::kHalfPixel, kCeilTie, {1, 1, 0.75, 1.25})},
    {"nearest_asymmetric_ties_floor",
     {1, 1, 3, 4},
     attrs(kNearest, CT::kAsymmetric, kFloorTie, {1, 1, 2, 2})},
    {"nearest_asymmetric_ties_ceil",
     {1, 1, 3, 4},
     attrs(kNearest, CT::kAsymmetric, kCeilTie, {1, 1, 2, 2})},
    {"nearest_half_pixel_down_ties",
     {1, 1, 6, 8},
     attrs(kNearest, CT::kHalfPixel, kFloorTie, {1, 1, 0.5, 0.5})},
    {"linear_half_pixel_up", {1, 2, 3, 5}, attrs(kLinear, CT::kHalfPixel, kFloorTie, {1, 1, 2, 2})},
    {"linear_align_corners_sizes",
     {1, 1, 3, 4},
     attrs(kLinear, CT::kAlignCorners, kFloorTie, {}, {1, 1, 5, 7})},
    {"linear_asymmetric_down",
     {1, 2, 7, 9},
     attrs(kLinear, CT::kAsymmetric, kFloorTie, {1, 1, 0.5, 0.75})},
    {"linear_pytorch_sizes",
     {1, 2, 4, 5},
     attrs(kLinear, CT::kPytorchHalfPixel, kFloorTie, {}, {1, 2, 1, 3})},
    {"linear_1d_half_pixel", {2, 3, 7}, attrs(kLinear, CT::kHalfPixel, kFloorTie, {1, 1, 2.5})},
    {"cubic_half_pixel_up", {1, 1, 4, 5}, attrs(kCubic, CT::kHalfPixel, kFloorTie, {1, 1, 2, 1.5})},
    {"cubic_exclude_outside_down",
     {1, 2, 8, 6},
     cubic(attrs(kCubic, CT::kHalfPixel, kFloorTie, {1, 1, 0.5, 0.75}), -0.5, true)},
    {"cubic_align_corners_sizes",
     {1, 1, 3, 4},
     attrs(kCubic, CT::kAlignCorners, kFloorTie, {}, {1, 1, 5, 7})},
    {"cubic_asymmetric_3d", {2, 5, 6}, attrs(kCubic, CT::kAsymmetric, kFloorTie, {1, 2, 0.5})},
    {"linear_tf_crop_and_resize",
     {1, 1, 5, 6},
     extrapolate(attrs(kLinear, CT::kTfCropAndResize, kFloorTie, {}, {1, 1, 4, 3}), 7),
     true},
    {"nearest_tf_crop_and_resize",
     {1, 2, 5, 4},
     attrs(kNearest, CT::kTfCropAndResize, kFloorTie, {}, {1, 2, 3, 1}),
     true},
};

// Symbolic kernels checked on random inputs against `reference` below.
const std::vector<Case> kRandomCases = {
    {"nearest_i64_4d", {}, attrs(kNearest, CT::kHalfPixel, kFloorTie, {1, 1, 2, 0.5})},
    {"linear_f32_align_corners", {}, attrs(kLinear, CT::kAlignCorners, kFloorTie, {1, 1, 3, 1.5})},
    {"linear_f32_3d_fractional", {}, attrs(kLinear, CT::kHalfPixel, kFloorTie, {1, 0.6f, 1.7f})},
    {"nearest_f32_1d_pytorch_ceil",
     {},
     attrs(kNearest, CT::kPytorchHalfPixel, NearestMode::kCeil, {0.75})},
    {"linear_i64_1d_asymmetric", {}, attrs(kLinear, CT::kAsymmetric, kFloorTie, {2.5})},
    {"nearest_f32_2d_asymmetric_ceil_tie", {}, attrs(kNearest, CT::kAsymmetric, kCeilTie, {3, 2})},
    // Integer scales index with `i floordiv k` where that is what the f64 rule picks.
    {"nearest_f32_2d_asymmetric_floor_integer",
     {},
     attrs(kNearest, CT::kAsymmetric, NearestMode::kFloor, {2, 3})},
    {"nearest_f32_3d_half_pixel_ceil_tie_integer",
     {},
     attrs(kNearest, CT::kHalfPixel, kCeilTie, {1, 4, 2})},
    {"nearest_f32_1d_pytorch_floor_tie_integer",
     {},
     attrs(kNearest, CT::kPytorchHalfPixel, kFloorTie, {5})},
    {"nearest_f32_1d_asymmetric_ceil_integer",
     {},
     attrs(kNearest, CT::kAsymmetric, NearestMode::kCeil, {3})},
    // Linear at integer scales reads each phase's neighbours at fixed offsets with fixed
    // weights, unclamped between the borders (sizes 1 and 3 are all border).
    {"linear_f32_4d_half_pixel_integer", {}, attrs(kLinear, CT::kHalfPixel, kFloorTie, {1, 1, 2, 2})},
    {"linear_f32_2d_half_pixel_integer_3",
     {},
     attrs(kLinear, CT::kHalfPixel, kFloorTie, {3, 3})},
    {"linear_f32_1d_pytorch_integer", {}, attrs(kLinear, CT::kPytorchHalfPixel, kFloorTie, {4})},
    {"linear_f32_2d_asymmetric_integer", {}, attrs(kLinear, CT::kAsymmetric, kFloorTie, {2, 3})},
};

vm::DType random_case_dtype(const std::string& name) {
  return name.find("i64") != std::string::npos ? kI64 : kF32;
}

std::vector<arith::Expr> symbolic_dims(size_t rank) {
  std::vector<arith::Expr> out;
  for (size_t d = 0; d < rank; ++d) out.push_back(arith::Var("d" + std::to_string(d)));
  return out;
}

class Resize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<OpToBuild> ops;
    for (const Case& c : kFixtureCases) {
      const size_t rank = c.in_shape.size();
      TensorType roi{kF32, dims({static_cast<int64_t>(2 * rank)})};
      const TensorType* roi_type = c.roi ? &roi : nullptr;
      ops.push_back({c.name + "_static", resize({kF32, dims(c.in_shape)}, c.attrs, roi_type)});
      if (!c.attrs.scales.empty()) {
        ops.push_back({c.name + "_sym", resize({kF32, symbolic_dims(rank)}, c.attrs, roi_type)});
      }
      // Scales or sizes only the run time knows: the output's dims bound from the output,
      // the scales read by the kernel (or out / in for sizes); no dim known to be kept.
      ResizeAttrs run_time_attrs = c.attrs;
      run_time_attrs.scales.clear();
      run_time_attrs.sizes.clear();
      TensorType scales{kF32, dims({static_cast<int64_t>(rank)})};
      ResizeAtRunTime rt;
      for (size_t d = 0; d < rank; ++d) rt.shape.push_back(arith::Var("o" + std::to_string(d)));
      rt.kept.assign(rank, false);
      if (!c.attrs.scales.empty()) rt.scales = &scales;
      ops.push_back({c.name + "_run_time", resize_at_run_time({kF32, symbolic_dims(rank)},
                                                              run_time_attrs, roi_type, rt)});
    }
    {
      // floor(dim * scale), -1 for a scale that is not positive and finite.
      TensorType x{kF32, symbolic_dims(3)}, scales{kF32, dims({3})};
      ops.push_back({"output_sizes", resize_output_sizes(x, scales)});
    }
    for (const Case& c : kRandomCases) {
      TensorType x{random_case_dtype(c.name), symbolic_dims(c.attrs.scales.size())};
      ops.push_back({c.name, resize(x, c.attrs)});
    }
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Resize::lib_ = nullptr;

std::string fixture(const std::string& name, const char* which) {
  return std::string(DYNVM_OPS_FIXTURES) + "/resize_" + name + "_" + which + ".npy";
}

TEST_F(Resize, MatchesTheOnnxReferenceFixtures) {
  for (const Case& c : kFixtureCases) {
    vm::Tensor x = vm::read_npy(fixture(c.name, "x"));
    vm::Tensor want = vm::read_npy(fixture(c.name, "y"));
    ASSERT_EQ(x.shape(), c.in_shape) << c.name;
    // Nearest copies elements; linear weighs them in f32 where the reference uses f64.
    double tol = c.attrs.mode == kNearest ? 0 : 1e-6;
    std::vector<vm::Tensor> inputs{x};
    if (c.roi) inputs.push_back(vm::read_npy(fixture(c.name, "roi")));
    std::vector<std::string> symbols = {c.name + "_static"};
    if (!c.attrs.scales.empty()) symbols.push_back(c.name + "_sym");
    for (const std::string& symbol : symbols) {
      vm::Tensor y = run_op(*lib_, symbol, inputs, want.shape(), kF32);
      expect_close(y, values(want), tol, tol, symbol);
    }
    std::vector<vm::Tensor> run_time_inputs = inputs;
    if (!c.attrs.scales.empty()) {
      run_time_inputs.push_back(vm::Tensor::from_vector(
          c.attrs.scales, {static_cast<int64_t>(c.attrs.scales.size())}, kF32));
    }
    vm::Tensor y = run_op(*lib_, c.name + "_run_time", run_time_inputs, want.shape(), kF32);
    expect_close(y, values(want), tol, tol, c.name + "_run_time");
  }
}

// The ONNX reference's input coordinate of output index x along one dim (resize.py).
double coordinate(int64_t x, int64_t in, int64_t out, double scale, CT ct) {
  auto xd = static_cast<double>(x);
  switch (ct) {
    case CT::kHalfPixel:
      return (xd + 0.5) / scale - 0.5;
    case CT::kAsymmetric:
      return xd / scale;
    case CT::kPytorchHalfPixel:
      return out == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
    case CT::kAlignCorners:
      return out == 1 ? 0 : xd * static_cast<double>(in - 1) / static_cast<double>(out - 1);
    case CT::kTfCropAndResize:
      break;  // fixtures only
  }
  return 0;
}

int64_t clamp_index(int64_t i, int64_t n) { return std::min(std::max<int64_t>(i, 0), n - 1); }

// Per dim, the two neighbours and their weights: one neighbour (weight 1) for nearest and
// for an integral coordinate.
struct Taps {
  int64_t lo = 0, hi = 0;
  double w_lo = 1, w_hi = 0;
};

Taps taps(double c, int64_t in, ResizeMode mode, NearestMode nearest) {
  double f = std::floor(c);
  auto fi = static_cast<int64_t>(f);
  if (c == f) return {clamp_index(fi, in), clamp_index(fi, in), 1, 0};
  double r = c - f;
  if (mode == kLinear) return {clamp_index(fi, in), clamp_index(fi + 1, in), 1 - r, r};
  bool up = nearest == kFloorTie  ? r > 0.5
            : nearest == kCeilTie ? r >= 0.5
                                  : nearest == NearestMode::kCeil;
  int64_t i = clamp_index(up ? fi + 1 : fi, in);
  return {i, i, 1, 0};
}

vm::Shape out_shape(const vm::Shape& in, const std::vector<float>& scales) {
  vm::Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * scales[d])));
  }
  return out;
}

std::vector<double> reference(const vm::Tensor& x, const ResizeAttrs& a) {
  const vm::Shape& in = x.shape();
  vm::Shape out = out_shape(in, a.scales);
  std::vector<double> result;
  for (int64_t o = 0; o < numel(out); ++o) {
    std::vector<Taps> t(in.size());
    int64_t rem = o;
    for (size_t d = in.size(); d-- > 0;) {
      int64_t xo = rem % out[d];
      rem /= out[d];
      double c = coordinate(xo, in[d], out[d], a.scales[d], a.coordinate_transformation_mode);
      t[d] = taps(c, in[d], a.mode, a.nearest_mode);
    }
    double v = 0;
    for (size_t corner = 0; corner < (size_t{1} << in.size()); ++corner) {
      double w = 1;
      int64_t flat = 0;
      for (size_t d = 0; d < in.size(); ++d) {
        bool hi = (corner >> d) & 1;
        w *= hi ? t[d].w_hi : t[d].w_lo;
        flat = flat * in[d] + (hi ? t[d].hi : t[d].lo);
      }
      if (w != 0) v += w * at(x, flat);
    }
    result.push_back(x.dtype() == kI64 ? std::nearbyint(v) : v);
  }
  return result;
}

TEST_F(Resize, RandomInputsAtAwkwardSizesOnSymbolicKernels) {
  std::mt19937 rng(51);
  const std::vector<int64_t> sizes = {1, 3, 7, 17, 129};
  for (const Case& c : kRandomCases) {
    size_t rank = c.attrs.scales.size();
    vm::DType dtype = random_case_dtype(c.name);
    for (size_t k = 0; k < sizes.size(); ++k) {
      // The resized dims take every size; leading dims stay small.
      vm::Shape in(rank, 2);
      for (size_t d = 0; d < rank; ++d) {
        if (c.attrs.scales[d] != 1) in[d] = sizes[(k + d) % sizes.size()];
      }
      vm::Tensor x = random_tensor(in, dtype, rng, -100, 100);
      vm::Tensor y = run_op(*lib_, c.name, {x}, out_shape(in, c.attrs.scales), dtype);
      double tol = dtype == kF32 && c.attrs.mode == kLinear ? 1e-5 : 0;
      expect_close(y, reference(x, c.attrs), tol, tol, c.name + " " + shape_name(in));
    }
  }
}

TEST_F(Resize, OutputSizesOfScalesReadAtRunTime) {
  auto sizes = [&](vm::Shape in, std::vector<float> scales) {
    vm::Tensor x = vm::Tensor::empty(in, kF32);
    vm::Tensor s = vm::Tensor::from_vector(scales, {3}, kF32);
    vm::Tensor n = run_op(*lib_, "output_sizes", {x, s}, {3}, kI64);
    return std::vector<int64_t>(n.data_as<int64_t>(), n.data_as<int64_t>() + 3);
  };
  // numpy: (np.float32([1, 0.6, 1.7]) * [2, 5, 7]).astype(int) == [2, 3, 11]
  EXPECT_EQ(sizes({2, 5, 7}, {1, 0.6f, 1.7f}), (std::vector<int64_t>{2, 3, 11}));
  EXPECT_EQ(sizes({4, 0, 3}, {0.25f, 3, 0.3f}), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(sizes({2, 2, 2}, {0, -1, std::nanf("")}), (std::vector<int64_t>{-1, -1, -1}));
  EXPECT_EQ(sizes({2, 2, 0}, {1, INFINITY, INFINITY}), (std::vector<int64_t>{2, -1, -1}));
}

TEST(ResizeShape, FractionalScalesOnSymbolicDimsAreExact) {
  arith::Var n("n");
  ResizeAttrs a = attrs(kNearest, CT::kHalfPixel, kFloorTie, {0.6f});
  std::vector<arith::Expr> shape = resize_output_shape({kF32, {n}}, a);
  ASSERT_EQ(shape.size(), 1u);
  // Static dims fold; the symbolic expression is checked at run time by the random cases.
  EXPECT_EQ(resize_output_shape({kF32, dims({10})}, a)[0].int_value(), 6);
  EXPECT_EQ(resize_output_shape({kF32, dims({5})}, a)[0].int_value(), 3);
  a.scales = {1};
  EXPECT_TRUE(arith::structural_equal(resize_output_shape({kF32, {n}}, a)[0], n));
}

TEST(ResizeBuilder, RejectsBadAttributes) {
  arith::Var n("n");
  TensorType x{kF32, {n, n}};
  EXPECT_USER_ERROR(resize(x, attrs(kNearest, CT::kHalfPixel, kFloorTie, {1, 2}, {1, 2})),
                    "exactly one of scales and sizes");
  EXPECT_USER_ERROR(resize(x, attrs(kNearest, CT::kHalfPixel, kFloorTie, {})),
                    "exactly one of scales and sizes");
  EXPECT_USER_ERROR(resize(x, attrs(kNearest, CT::kHalfPixel, kFloorTie, {2})), "1 scales");
  EXPECT_USER_ERROR(resize(x, attrs(kNearest, CT::kHalfPixel, kFloorTie, {1, 0})),
                    "must be positive");
  EXPECT_USER_ERROR(resize(x, attrs(kNearest, CT::kHalfPixel, kFloorTie, {1, -2})),
                    "must be positive");
  EXPECT_USER_ERROR(resize(x, attrs(kNearest, CT::kHalfPixel, kFloorTie, {}, {4, 4})), "symbolic");
  EXPECT_USER_ERROR(
      resize({kF32, dims({2, 3})}, attrs(kNearest, CT::kHalfPixel, kFloorTie, {}, {2, -1})),
      "negative");
  EXPECT_USER_ERROR(
      resize({kF32, dims({2, 4})}, attrs(kLinear, CT::kTfCropAndResize, kFloorTie, {}, {2, 3})),
      "tf_crop_and_resize needs roi");
  EXPECT_USER_ERROR(resize({kBool, {n}}, attrs(kLinear, CT::kHalfPixel, kFloorTie, {2})), "bool");
  EXPECT_USER_ERROR(resize({kF32, {}}, attrs(kNearest, CT::kHalfPixel, kFloorTie, {})),
                    "rank >= 1");
  EXPECT_USER_ERROR(resize_mode_from_string("bicubic"), "unsupported mode 'bicubic'");
  EXPECT_USER_ERROR(nearest_mode_from_string("round"), "nearest_mode 'round'");
  EXPECT_USER_ERROR(coordinate_transform_from_string("half_pixel_symmetric"),
                    "coordinate_transformation_mode 'half_pixel_symmetric'");
  EXPECT_EQ(coordinate_transform_from_string("tf_crop_and_resize"), CT::kTfCropAndResize);
  EXPECT_EQ(resize_mode_from_string("cubic"), kCubic);
  EXPECT_EQ(coordinate_transform_from_string("pytorch_half_pixel"), CT::kPytorchHalfPixel);
  EXPECT_EQ(nearest_mode_from_string("ceil"), NearestMode::kCeil);
  EXPECT_EQ(resize_mode_from_string("linear"), kLinear);
}

}  // namespace
}  // namespace dynvm::ops::testing
