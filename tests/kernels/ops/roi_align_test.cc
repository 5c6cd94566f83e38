// RoiAlign compiled for the host with symbolic N, C, H, W and num_rois (two kernels per
// configuration: channels sharing each sample, or one element at a time; plus static-shape
// kernels), checked
// against ONNX Runtime 1.30's outputs (fixtures/make_roi_align_fixtures.py: avg and max,
// half_pixel and output_half_pixel, adaptive and fixed sampling ratios, f32 and f64, rois
// inside, across, outside and larger than the image, smaller than a pixel, reversed), against
// a loop that follows the ONNX operator (ORT's CPU kernel, in the input's float type) on
// random inputs, and against values worked out by hand.
#include "kernels/ops/roi_align.h"

#include <algorithm>
#include <cmath>

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"
#include "vm/npy.h"

namespace dynvm::ops::testing {
namespace {

struct Config {
  const char* name;
  RoiAlignAttrs attrs;
  vm::DType dtype;
};

// As in make_roi_align_fixtures.py.
const Config kConfigs[] = {
    {"avg_half_pixel_adaptive",
     {RoiAlignMode::kAvg, RoiCoordinates::kHalfPixel, 3, 4, 0, 0.5f},
     kF32},
    {"avg_output_half_pixel_adaptive",
     {RoiAlignMode::kAvg, RoiCoordinates::kOutputHalfPixel, 3, 4, 0, 0.5f},
     kF32},
    {"max_half_pixel_adaptive",
     {RoiAlignMode::kMax, RoiCoordinates::kHalfPixel, 3, 4, 0, 0.5f},
     kF32},
    {"max_output_half_pixel_adaptive",
     {RoiAlignMode::kMax, RoiCoordinates::kOutputHalfPixel, 3, 4, 0, 0.5f},
     kF32},
    {"avg_half_pixel_ratio2",
     {RoiAlignMode::kAvg, RoiCoordinates::kHalfPixel, 2, 3, 2, 1.0f},
     kF32},
    {"max_output_half_pixel_ratio3",
     {RoiAlignMode::kMax, RoiCoordinates::kOutputHalfPixel, 2, 3, 3, 1.0f},
     kF32},
    {"avg_output_half_pixel_ratio1",
     {RoiAlignMode::kAvg, RoiCoordinates::kOutputHalfPixel, 1, 1, 1, 0.25f},
     kF32},
    {"avg_half_pixel_adaptive_f64",
     {RoiAlignMode::kAvg, RoiCoordinates::kHalfPixel, 3, 4, 0, 0.5f},
     kF64},
};

// Every configuration is also built with the template's other variant: serial, one output
// element's samples at a time (`_unshared`).
const KnobValues kOtherKnobs = {{"parallel", 0}, {"share_samples", 0}};
const char* const kVariants[] = {"", "_unshared"};

// Static shapes [2, 3, 7, 9] and 8 rois, in parallel.
const Config& kStaticConfig = kConfigs[2];
const Config& kStaticRatioConfig = kConfigs[4];
const KnobValues kParallel = {{"parallel", 1}};

// The hand-worked cases: output 1 x 1, spatial_scale 1.
RoiAlignAttrs one_bin(RoiAlignMode mode, RoiCoordinates coordinates, int64_t sampling_ratio) {
  return {mode, coordinates, 1, 1, sampling_ratio, 1.0f};
}

std::string fixture(const std::string& name) {
  return std::string(DYNVM_OPS_FIXTURES) + "/roi_align_" + name + ".npy";
}

vm::Tensor widened(const vm::Tensor& t, vm::DType dtype) {
  if (t.dtype() == dtype) return t;
  vm::Tensor out = vm::Tensor::empty(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) out.data_as<double>()[i] = t.data_as<float>()[i];
  return out;
}

// The ONNX operator as ORT's CPU kernel computes it, in T, element by element.
template <typename T>
std::vector<double> reference(const vm::Tensor& x, const vm::Tensor& rois,
                              const vm::Tensor& batch_indices, const RoiAlignAttrs& a) {
  const int64_t images = x.shape()[0], channels = x.shape()[1], height = x.shape()[2],
                width = x.shape()[3], num_rois = rois.shape()[0];
  const int64_t oh = a.output_height, ow = a.output_width;
  const T* data = x.data_as<T>();
  const bool half_pixel = a.coordinates == RoiCoordinates::kHalfPixel;
  std::vector<double> out;
  for (int64_t n = 0; n < num_rois; ++n) {
    const T* box = rois.data_as<T>() + 4 * n;
    const int64_t image = batch_indices.data_as<int64_t>()[n];
    const T offset = half_pixel ? T(0.5) : T(0), scale = static_cast<T>(a.spatial_scale);
    const T start_x = box[0] * scale - offset, start_y = box[1] * scale - offset;
    T roi_w = box[2] * scale - offset - start_x, roi_h = box[3] * scale - offset - start_y;
    if (!half_pixel) {
      roi_w = std::max(roi_w, T(1));
      roi_h = std::max(roi_h, T(1));
    }
    const T bin_h = roi_h / static_cast<T>(oh), bin_w = roi_w / static_cast<T>(ow);
    const int64_t grid_h = a.sampling_ratio > 0
                               ? a.sampling_ratio
                               : static_cast<int64_t>(std::ceil(roi_h / static_cast<T>(oh)));
    const int64_t grid_w = a.sampling_ratio > 0
                               ? a.sampling_ratio
                               : static_cast<int64_t>(std::ceil(roi_w / static_cast<T>(ow)));
    const int64_t count = std::max<int64_t>(grid_h * grid_w, 1);
    for (int64_t c = 0; c < channels; ++c) {
      const T* plane = data + (image * channels + c) * height * width;
      for (int64_t ph = 0; ph < oh; ++ph) {
        for (int64_t pw = 0; pw < ow; ++pw) {
          T acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            const T yy = start_y + static_cast<T>(ph) * bin_h +
                         (static_cast<T>(iy) + T(0.5)) * bin_h / static_cast<T>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const T xx = start_x + static_cast<T>(pw) * bin_w +
                           (static_cast<T>(ix) + T(0.5)) * bin_w / static_cast<T>(grid_w);
              T y = yy, xc = xx;
              T value = 0;
              if (!(y < -1 || y > static_cast<T>(height) || xc < -1 ||
                    xc > static_cast<T>(width))) {
                y = std::max(y, T(0));
                xc = std::max(xc, T(0));
                int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(xc);
                int64_t y_high = y_low + 1, x_high = x_low + 1;
                if (y_low >= height - 1) {
                  y_high = y_low = height - 1;
                  y = static_cast<T>(y_low);
                }
                if (x_low >= width - 1) {
                  x_high = x_low = width - 1;
                  xc = static_cast<T>(x_low);
                }
                const T ly = y - static_cast<T>(y_low), lx = xc - static_cast<T>(x_low);
                const T hy = 1 - ly, hx = 1 - lx;
                const T p1 = hy * hx * plane[y_low * width + x_low];
                const T p2 = hy * lx * plane[y_low * width + x_high];
                const T p3 = ly * hx * plane[y_high * width + x_low];
                const T p4 = ly * lx * plane[y_high * width + x_high];
                value =
                    a.mode == RoiAlignMode::kAvg ? p1 + p2 + p3 + p4 : std::max({p1, p2, p3, p4});
              }
              if (a.mode == RoiAlignMode::kAvg) {
                acc += value;
              } else {
                acc = first ? value : std::max(acc, value);
              }
              first = false;
            }
          }
          out.push_back(a.mode == RoiAlignMode::kAvg ? acc / static_cast<T>(count) : acc);
        }
      }
    }
  }
  EXPECT_GT(images, 0);
  return out;
}

std::vector<double> reference(const vm::Tensor& x, const vm::Tensor& rois,
                              const vm::Tensor& batch_indices, const RoiAlignAttrs& a) {
  return x.dtype() == kF64 ? reference<double>(x, rois, batch_indices, a)
                           : reference<float>(x, rois, batch_indices, a);
}

vm::Shape output_shape(const vm::Tensor& x, const vm::Tensor& rois, const RoiAlignAttrs& a) {
  return {rois.shape()[0], x.shape()[1], a.output_height, a.output_width};
}

class RoiAlign : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var n("n"), c("c"), h("h"), w("w"), r("r");
    std::vector<OpToBuild> ops;
    for (const Config& config : kConfigs) {
      for (const char* variant : kVariants) {
        ops.push_back({config.name + std::string(variant),
                       roi_align({config.dtype, {n, c, h, w}}, {config.dtype, {r, arith::Expr(4)}},
                                 {kI64, {r}}, config.attrs),
                       *variant ? kOtherKnobs : KnobValues{}});
      }
    }
    for (const Config* config : {&kStaticConfig, &kStaticRatioConfig}) {
      ops.push_back({std::string(config->name) + "_static",
                     roi_align({kF32, dims({2, 3, 7, 9})}, {kF32, dims({8, 4})}, {kI64, dims({8})},
                               config->attrs),
                     kParallel});
    }
    for (RoiAlignMode mode : {RoiAlignMode::kAvg, RoiAlignMode::kMax}) {
      for (RoiCoordinates coordinates :
           {RoiCoordinates::kHalfPixel, RoiCoordinates::kOutputHalfPixel}) {
        for (int64_t ratio : {0, 1}) {
          ops.push_back({hand_name(mode, coordinates, ratio),
                         roi_align({kF32, {n, c, h, w}}, {kF32, {r, arith::Expr(4)}}, {kI64, {r}},
                                   one_bin(mode, coordinates, ratio))});
        }
      }
    }
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }

  static std::string hand_name(RoiAlignMode mode, RoiCoordinates coordinates, int64_t ratio) {
    return std::string("hand_") + (mode == RoiAlignMode::kAvg ? "avg" : "max") +
           (coordinates == RoiCoordinates::kHalfPixel ? "_hp_" : "_ohp_") + std::to_string(ratio);
  }

  // The hand-worked image [[1, 2], [3, 4]] and one roi.
  static double one_bin_value(RoiAlignMode mode, RoiCoordinates coordinates, int64_t ratio,
                              const std::vector<float>& roi) {
    vm::Tensor x = vm::Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2}, kF32);
    vm::Tensor rois = vm::Tensor::from_vector(roi, {1, 4}, kF32);
    vm::Tensor batch = vm::Tensor::from_vector(std::vector<int64_t>{0}, {1}, kI64);
    vm::Tensor y =
        run_op(*lib_, hand_name(mode, coordinates, ratio), {x, rois, batch}, {1, 1, 1, 1}, kF32);
    return at(y, 0);
  }

  static OpLibrary* lib_;
};
OpLibrary* RoiAlign::lib_ = nullptr;

TEST_F(RoiAlign, MatchesOnnxRuntime) {
  const vm::Tensor x = vm::read_npy(fixture("x"));
  const vm::Tensor rois = vm::read_npy(fixture("rois"));
  const vm::Tensor batch = vm::read_npy(fixture("batch_indices"));
  for (const Config& config : kConfigs) {
    vm::Tensor want = vm::read_npy(fixture(config.name));
    for (const char* variant : kVariants) {
      const std::string name = config.name + std::string(variant);
      vm::Tensor y =
          run_op(*lib_, name, {widened(x, config.dtype), widened(rois, config.dtype), batch},
                 want.shape(), config.dtype);
      // The same operations in the same type; LLVM may contract a multiply-add.
      expect_close(y, values(want), 1e-5, 1e-6, name);
    }
  }
  for (const Config* config : {&kStaticConfig, &kStaticRatioConfig}) {
    const std::string name = std::string(config->name) + "_static";
    vm::Tensor want = vm::read_npy(fixture(config->name));
    vm::Tensor y = run_op(*lib_, name, {x, rois, batch}, want.shape(), kF32);
    expect_close(y, values(want), 1e-5, 1e-6, name);
  }
}

TEST_F(RoiAlign, MatchesTheOperatorsLoopOnRandomInputs) {
  std::mt19937 rng(23);
  // N, C, H, W, num_rois: single pixels and rows, more rois than images, no roi at all.
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 1, 1, 1, 2}, {2, 3, 7, 9, 8}, {1, 2, 5, 1, 3}, {3, 1, 16, 12, 6}, {2, 2, 4, 4, 0}};
  for (const Config& config : kConfigs) {
    for (const auto& s : shapes) {
      const int64_t images = s[0], height = s[2], width = s[3], num_rois = s[4];
      vm::Tensor x = random_tensor({images, s[1], height, width}, config.dtype, rng);
      // Corners in input pixels (1 / spatial_scale per feature pixel), some past the edges
      // and some reversed.
      const double span_y = height / config.attrs.spatial_scale,
                   span_x = width / config.attrs.spatial_scale;
      vm::Tensor rois = vm::Tensor::empty({num_rois, 4}, config.dtype);
      vm::Tensor batch = random_tensor({num_rois}, kI64, rng, 0, static_cast<double>(images - 1));
      for (int64_t k = 0; k < num_rois; ++k) {
        const double x1 = std::uniform_real_distribution<double>(-0.3, 1.0)(rng) * span_x;
        const double y1 = std::uniform_real_distribution<double>(-0.3, 1.0)(rng) * span_y;
        const double x2 = x1 + std::uniform_real_distribution<double>(-0.1, 1.2)(rng) * span_x;
        const double y2 = y1 + std::uniform_real_distribution<double>(-0.1, 1.2)(rng) * span_y;
        const double corners[] = {x1, y1, x2, y2};
        for (int64_t j = 0; j < 4; ++j) {
          if (config.dtype == kF64) {
            rois.data_as<double>()[4 * k + j] = corners[j];
          } else {
            rois.data_as<float>()[4 * k + j] = static_cast<float>(corners[j]);
          }
        }
      }
      const std::vector<double> want = reference(x, rois, batch, config.attrs);
      for (const char* variant : kVariants) {
        const std::string name = config.name + std::string(variant);
        vm::Tensor y = run_op(*lib_, name, {x, rois, batch}, output_shape(x, rois, config.attrs),
                              config.dtype);
        expect_close(
            y, want, 1e-5, 1e-6,
            name + " " + shape_name(x.shape()) + " x " + std::to_string(num_rois) + " rois");
      }
    }
  }
}

TEST_F(RoiAlign, MatchesHandWorkedValues) {
  using enum RoiAlignMode;
  using enum RoiCoordinates;
  // output_half_pixel, one sample at (0.5, 0.5): the four pixels weigh 1/4 each; max takes
  // the largest weighted pixel (ORT's max), not the interpolated value.
  EXPECT_FLOAT_EQ(one_bin_value(kAvg, kOutputHalfPixel, 1, {0, 0, 1, 1}), 2.5f);
  EXPECT_FLOAT_EQ(one_bin_value(kMax, kOutputHalfPixel, 1, {0, 0, 1, 1}), 1.0f);
  // half_pixel moves the roi by -0.5: the sample sits on pixel (0, 0).
  EXPECT_FLOAT_EQ(one_bin_value(kAvg, kHalfPixel, 1, {0, 0, 1, 1}), 1.0f);
  EXPECT_FLOAT_EQ(one_bin_value(kMax, kHalfPixel, 1, {0, 0, 1, 1}), 1.0f);
  // Adaptive: a 2 x 2 roi takes 2 x 2 samples at 0.5 and 1.5, the latter clamped onto the
  // last row / column: (2.5 + 3 + 3.5 + 4) / 4, and for max 1, 2, 2, 4.
  EXPECT_FLOAT_EQ(one_bin_value(kAvg, kOutputHalfPixel, 0, {0, 0, 2, 2}), 3.25f);
  EXPECT_FLOAT_EQ(one_bin_value(kMax, kOutputHalfPixel, 0, {0, 0, 2, 2}), 4.0f);
  // half_pixel [0.5, 2.5]: samples at 1 and 2 (2 lies past the last pixel, within one).
  EXPECT_FLOAT_EQ(one_bin_value(kAvg, kHalfPixel, 0, {1, 1, 3, 3}), 4.0f);
  // A roi more than one pixel outside the image: every sample is 0.
  EXPECT_FLOAT_EQ(one_bin_value(kAvg, kOutputHalfPixel, 0, {5, 5, 7, 7}), 0.0f);
  // x2 < x1 under half_pixel: no sample at all, 0 (max: not the reduction's identity).
  EXPECT_FLOAT_EQ(one_bin_value(kAvg, kHalfPixel, 0, {2, 2, 1, 1}), 0.0f);
  EXPECT_FLOAT_EQ(one_bin_value(kMax, kHalfPixel, 0, {2, 2, 1, 1}), 0.0f);
  // output_half_pixel makes it 1 x 1 instead: one sample at (1.7, 1.7), clamped onto the
  // last row and column: pixel (1, 1).
  EXPECT_FLOAT_EQ(one_bin_value(kAvg, kOutputHalfPixel, 0, {1.2f, 1.2f, 0.2f, 0.2f}), 4.0f);
}

TEST_F(RoiAlign, AnEmptyImageGivesZeros) {
  for (const vm::Shape& shape : {vm::Shape{1, 2, 0, 3}, vm::Shape{0, 2, 3, 3}}) {
    vm::Tensor x = vm::Tensor::empty(shape, kF32);
    vm::Tensor rois =
        vm::Tensor::from_vector(std::vector<float>{0, 0, 2, 2, 1, 1, 3, 3}, {2, 4}, kF32);
    vm::Tensor batch = vm::Tensor::from_vector(std::vector<int64_t>{0, 0}, {2}, kI64);
    for (const Config& config : {kConfigs[0], kConfigs[5]}) {
      vm::Tensor y =
          run_op(*lib_, config.name, {x, rois, batch}, output_shape(x, rois, config.attrs), kF32);
      expect_close(y, std::vector<double>(static_cast<size_t>(y.numel()), 0.0), 0, 0,
                   std::string(config.name) + " " + shape_name(shape));
    }
  }
}

TEST_F(RoiAlign, RejectsRoisAndBatchIndicesOfDifferentLengths) {
  vm::Tensor x = vm::Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2}, kF32);
  vm::Tensor rois = vm::Tensor::from_vector(std::vector<float>{0, 0, 1, 1}, {1, 4}, kF32);
  vm::Tensor batch = vm::Tensor::from_vector(std::vector<int64_t>{0, 0}, {2}, kI64);
  vm::Tensor y = poisoned({1, 1, 3, 4}, kF32);
  EXPECT_FALSE(lib_->run(kConfigs[0].name, {x, rois, batch, y}).ok());
}

TEST(RoiAlignBuilder, RejectsBadShapesTypesAndAttributes) {
  arith::Var n("n");
  const TensorType x{kF32, {n, n, n, n}}, rois{kF32, {n, arith::Expr(4)}}, batch{kI64, {n}};
  const RoiAlignAttrs attrs;
  EXPECT_USER_ERROR(roi_align({kF32, {n, n, n}}, rois, batch, attrs), "4-D");
  EXPECT_USER_ERROR(roi_align({kI64, {n, n, n, n}}, rois, batch, attrs), "f32 or f64");
  EXPECT_USER_ERROR(roi_align(x, {kF64, {n, arith::Expr(4)}}, batch, attrs), "X's dtype");
  EXPECT_USER_ERROR(roi_align(x, {kF32, {n, arith::Expr(5)}}, batch, attrs), "4 columns");
  EXPECT_USER_ERROR(roi_align(x, rois, {kF32, {n}}, attrs), "int64");
  RoiAlignAttrs zero_height = attrs;
  zero_height.output_height = 0;
  EXPECT_USER_ERROR(roi_align(x, rois, batch, zero_height), "positive");
  RoiAlignAttrs negative_ratio = attrs;
  negative_ratio.sampling_ratio = -1;
  EXPECT_USER_ERROR(roi_align(x, rois, batch, negative_ratio), "sampling_ratio");
  EXPECT_USER_ERROR(roi_align_mode("sum"), "unknown mode");
  EXPECT_USER_ERROR(roi_coordinates("align_corners"), "unknown coordinate_transformation_mode");
}

}  // namespace
}  // namespace dynvm::ops::testing
