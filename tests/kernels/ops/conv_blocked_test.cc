// Channel-blocked convolutions compiled for the host, against plain double loops over NCHW:
// the input blocked by to_blocked (its lanes past C checked zero), convolved blocked with
// weights packed as conv_blocked.h documents, and unblocked by from_blocked. Depthwise 3x3
// stride 2 and 5x5 dilated, with and without a bias, a fused epilogue; dense: pointwise with
// an odd and an even number of output blocks and non-default knobs, 3x3 of unit and stride 2
// over full and partial input blocks (NaN in the padded lanes, which the sum must skip),
// dilated with uneven pads, two groups of whole blocks, and stems over an NCHW input; symbolic
// N/H/W called at sizes from 1x1 (smaller than the window) up, and static shapes. The builders'
// rejections. Winograd F(4x4, 3x3) and F(2x2, 3x3) (weights transformed by winograd_weights):
// symbolic with an epilogue, uneven pads with non-default knobs, static, groups, per chunk
// of tiles (23x37: 60 tiles, chunks of 8) and at the root.
#include "kernels/ops/conv_blocked.h"

#include <algorithm>

#include "kernels/ops/conv_winograd.h"
#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

const arith::Var kN("n"), kH("h"), kW("w");

struct Case {
  std::string symbol;
  int64_t c = 0, m = 0;  // input and output channels
  BlockedConvAttrs attrs;
  bool bias = true;
  bool relu = false;  // a fused epilogue
  KnobValues knobs;
  std::vector<int64_t> static_hw;  // empty: symbolic n, h, w
  bool nchw_in = false;            // a dense conv over the NCHW input itself
};

std::vector<Case> cases() {
  BlockedConvAttrs dw3{{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, true};
  BlockedConvAttrs dw5{{5, 5}, {1, 1}, {2, 3, 1, 2}, {2, 1}, true};
  BlockedConvAttrs pw{{1, 1}, {}, {}, {}, false};
  BlockedConvAttrs d3{{3, 3}, {}, {1, 1, 1, 1}, {}, false};
  BlockedConvAttrs d3_s2{{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false};
  BlockedConvAttrs d3_dil{{3, 3}, {1, 2}, {2, 1, 1, 2}, {2, 1}, false};
  BlockedConvAttrs stem7{{7, 7}, {2, 2}, {3, 3, 3, 3}, {}, false};
  BlockedConvAttrs g2{{3, 3}, {1, 1}, {1, 1, 1, 1}, {}, false, 2};  // 2 groups of whole blocks
  BlockedConvAttrs wino4{{3, 3}, {}, {1, 1, 1, 1}, {}, false, 1, 4};
  BlockedConvAttrs wino4_uneven{{3, 3}, {1, 1}, {1, 0, 0, 2}, {1, 1}, false, 1, 4};
  BlockedConvAttrs wino2{{3, 3}, {}, {1, 1, 1, 1}, {}, false, 1, 2};
  BlockedConvAttrs wino4_groups{{3, 3}, {}, {1, 1, 1, 1}, {}, false, 4, 4};
  return {
      {"dw3_s2", 20, 20, dw3, true, false, {}, {}},
      {"dw5_dil_nobias_relu", 36, 36, dw5, false, true, {}, {}},
      {"dw3_s2_static", 20, 20, dw3, true, true, {}, {9, 12}},
      {"pw_odd_blocks", 20, 36, pw, true, false, {}, {}},
      {"pw_partial_block_relu", 20, 24, pw, true, true, {}, {}},
      {"pw_even_relu", 36, 32, pw, true, true, {}, {}},
      {"pw_full_blocks", 32, 24, pw, false, false, {}, {}},
      {"dense3_full_blocks", 32, 20, d3, true, true, {}, {}},
      {"dense3_s2_partial", 20, 32, d3_s2, true, false, {}, {}},
      {"dense3_dil_static", 36, 16, d3_dil, false, true, {}, {9, 12}},
      {"stem7_nchw", 3, 20, stem7, true, true, {}, {}, true},
      {"dense3_groups", 64, 32, g2, true, true, {}, {}},
      {"stem3_s2_nchw_static", 3, 16, d3_s2, true, false, {}, {9, 12}, true},
      {"winograd4_relu", 32, 20, wino4, true, true, {}, {}},
      // U beyond L2 (1.2 MB): V and M at the root, not per chunk of tiles.
      {"winograd4_root", 64, 128, wino4, true, false, {}, {}},
      {"winograd4_static", 48, 32, wino4, true, false, {}, {9, 12}},
      {"winograd2_static", 32, 36, wino2, true, true, {}, {9, 12}},
      {"winograd4_groups", 64, 64, wino4_groups, true, true, {}, {}},  // 4 groups of 16
      {"winograd4_uneven_pads_knobs",
       16,
       48,
       wino4_uneven,
       false,
       false,
       {{"oc_block", 1}, {"tile_block", 6}, {"parallel", 0}},
       {}},
      {"pw_knobs",
       20,
       36,
       pw,
       false,
       false,
       {{"oc_block", 2}, {"ow_block", 4}, {"parallel", 0}},
       {}},
  };
}

TensorType x_type(const Case& c) {
  if (c.nchw_in && c.static_hw.empty()) return {kF32, {kN, c.c, kH, kW}};
  if (c.nchw_in) return {kF32, dims({1, c.c, c.static_hw[0], c.static_hw[1]})};
  if (c.static_hw.empty()) return {kF32, {kN, channel_blocks(c.c), kH, kW, kChannelBlock}};
  return {kF32, dims({1, channel_blocks(c.c), c.static_hw[0], c.static_hw[1], kChannelBlock})};
}

vm::Shape w_shape(const Case& c) {
  if (c.attrs.winograd != 0) {
    const int64_t alpha = c.attrs.winograd + 2;
    return {alpha, alpha, channel_blocks(c.m), c.c / c.attrs.groups, kChannelBlock};
  }
  if (c.attrs.depthwise) {
    return {channel_blocks(c.c), c.attrs.kernel[0], c.attrs.kernel[1], kChannelBlock};
  }
  return {channel_blocks(c.m), c.c / c.attrs.groups, c.attrs.kernel[0], c.attrs.kernel[1],
          kChannelBlock};
}

OpInstance build(const Case& c) {
  std::optional<TensorType> b;
  if (c.bias) b = TensorType{kF32, dims({channel_blocks(c.m), kChannelBlock})};
  OpInstance op = conv_blocked(x_type(c), TensorType{kF32, dims(w_shape(c))}, b, c.attrs);
  if (!c.relu) return op;
  FusedEpilogue e{"_relu", {}, [](const tir::Expr& v, const te::Indices&) {
                    return tir::max(v, tir::make_const(v.type(), 0.0));
                  }};
  return op.with_epilogue(e);
}

vm::Tensor zeros(const vm::Shape& shape) {
  vm::Tensor t = vm::Tensor::empty(shape, kF32);
  std::fill(t.data_as<float>(), t.data_as<float>() + t.numel(), 0.0f);
  return t;
}

// The NCHW weights ([M, C or 1, kH, kW]) and bias ([M]) laid out as conv_blocked reads them.
vm::Tensor pack_weights(const Case& c, const vm::Tensor& w) {
  vm::Tensor p = zeros(w_shape(c));
  if (c.attrs.winograd != 0) {
    const std::vector<float> u =
        winograd_weights(w.data_as<float>(), c.m, c.c / c.attrs.groups, c.attrs.winograd);
    std::copy(u.begin(), u.end(), p.data_as<float>());
    return p;
  }
  float* out = p.data_as<float>();
  const int64_t kh = c.attrs.kernel[0], kw = c.attrs.kernel[1];
  for (int64_t o = 0; o < c.m; ++o) {
    if (c.attrs.depthwise) {
      for (int64_t k = 0; k < kh * kw; ++k) {
        out[((o / kChannelBlock) * kh * kw + k) * kChannelBlock + o % kChannelBlock] =
            static_cast<float>(at(w, o * kh * kw + k));
      }
      continue;
    }
    const int64_t per_out = c.c / c.attrs.groups * kh * kw;
    for (int64_t i = 0; i < per_out; ++i) {  // (input channel of the group, tap)
      out[((o / kChannelBlock) * per_out + i) * kChannelBlock + o % kChannelBlock] =
          static_cast<float>(at(w, o * per_out + i));
    }
  }
  return p;
}

vm::Tensor pack_bias(const Case& c, const vm::Tensor& b) {
  vm::Tensor p = zeros({channel_blocks(c.m), kChannelBlock});
  for (int64_t o = 0; o < c.m; ++o) p.data_as<float>()[o] = static_cast<float>(at(b, o));
  return p;
}

// Y[n, o, y, x] over NCHW x: the depthwise or dense conv, bias, relu.
std::vector<double> reference(const Case& c, const vm::Tensor& x, const vm::Tensor& w,
                              const vm::Tensor* b, int64_t n, int64_t h, int64_t wd) {
  const auto& a = c.attrs;
  const int64_t kh = a.kernel[0], kw = a.kernel[1];
  const int64_t sh = a.strides.empty() ? 1 : a.strides[0],
                sw = a.strides.empty() ? 1 : a.strides[1];
  const int64_t dh = a.dilations.empty() ? 1 : a.dilations[0];
  const int64_t dw = a.dilations.empty() ? 1 : a.dilations[1];
  std::vector<int64_t> p = a.pads.empty() ? std::vector<int64_t>(4, 0) : a.pads;
  const int64_t oh = (h + p[0] + p[2] - dh * (kh - 1) - 1) / sh + 1;
  const int64_t ow = (wd + p[1] + p[3] - dw * (kw - 1) - 1) / sw + 1;
  std::vector<double> out;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t o = 0; o < c.m; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double acc = b ? at(*b, o) : 0.0;
          const int64_t per_out = a.depthwise ? 1 : c.c / a.groups;
          for (int64_t i = 0; i < per_out; ++i) {
            const int64_t ch = a.depthwise ? o : o / (c.m / a.groups) * per_out + i;
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t iy = y * sh - p[0] + ky * dh, ix = xo * sw - p[1] + kx * dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += at(x, ((in * c.c + ch) * h + iy) * wd + ix) *
                       at(w, ((o * per_out + i) * kh + ky) * kw + kx);
              }
          }
          out.push_back(c.relu ? std::max(acc, 0.0) : acc);
        }
  return out;
}

TEST(OpsConvBlocked, MatchesNchwLoopsAtEverySize) {
  std::vector<OpToBuild> ops;
  for (const Case& c : cases()) ops.push_back({c.symbol, build(c), c.knobs});
  for (int64_t ch : {16, 20, 32, 36, 48, 64}) {
    ops.push_back({"to" + std::to_string(ch), to_blocked(TensorType{kF32, {kN, ch, kH, kW}})});
  }
  for (int64_t ch : {16, 20, 24, 32, 36, 48, 64, 128}) {
    ops.push_back(
        {"from" + std::to_string(ch),
         from_blocked(TensorType{kF32, {kN, channel_blocks(ch), kH, kW, kChannelBlock}}, ch)});
  }
  OpLibrary lib = OpLibrary::build(ops);
  std::mt19937 rng(7);
  for (const Case& c : cases()) {
    std::vector<std::vector<int64_t>> sizes = {
        {1, 1, 1}, {1, 2, 3}, {2, 7, 7}, {1, 14, 9}, {1, 5, 33}};
    // Winograd over several chunks of 8 tiles and a short last one (60 tiles); its wide
    // case at the root at fewer sizes (double loops over 64 x 128 channels are slow under
    // the sanitizers).
    if (c.attrs.winograd != 0) sizes.push_back({1, 23, 37});
    if (c.m > 64) sizes = {{1, 1, 1}, {2, 7, 7}, {1, 23, 37}};
    if (!c.static_hw.empty()) sizes = {{1, c.static_hw[0], c.static_hw[1]}};
    for (const auto& s : sizes) {
      const int64_t n = s[0], h = s[1], wd = s[2];
      // The output's spatial dims by ONNX's rule; sizes the window does not fit are skipped.
      const auto& a = c.attrs;
      auto out_dim = [&](int64_t in, size_t d) {
        const int64_t st = a.strides.empty() ? 1 : a.strides[d];
        const int64_t di = a.dilations.empty() ? 1 : a.dilations[d];
        const int64_t pads = a.pads.empty() ? 0 : a.pads[d] + a.pads[d + 2];
        const int64_t span = in + pads - di * (a.kernel[d] - 1) - 1;
        return span < 0 ? 0 : span / st + 1;
      };
      const int64_t oh = out_dim(h, 0), ow = out_dim(wd, 1);
      if (oh < 1 || ow < 1) continue;
      const std::string what = c.symbol + " at " + shape_name({n, c.c, h, wd});
      vm::Tensor x = random_tensor({n, c.c, h, wd}, kF32, rng);
      const int64_t per_out = c.attrs.depthwise ? 1 : c.c / c.attrs.groups;
      vm::Tensor w = random_tensor({c.m, per_out, c.attrs.kernel[0], c.attrs.kernel[1]}, kF32, rng);
      vm::Tensor b = random_tensor({c.m}, kF32, rng);
      const int64_t cb = channel_blocks(c.c);
      vm::Tensor xb = x;
      if (!c.nchw_in) {
        xb = run_op(lib, "to" + std::to_string(c.c), {x}, {n, cb, h, wd, kChannelBlock}, kF32);
      }
      for (int64_t i = 0; !c.nchw_in && i < xb.numel(); ++i) {
        const int64_t lane = i % kChannelBlock, block = i / (kChannelBlock * h * wd) % cb;
        const int64_t ch = block * kChannelBlock + lane;
        const int64_t pos = i / kChannelBlock % (h * wd), in = i / (kChannelBlock * h * wd * cb);
        const double want = ch < c.c ? at(x, (in * c.c + ch) * h * wd + pos) : 0.0;
        ASSERT_EQ(at(xb, i), want) << what << ": to_blocked element " << i;
      }
      // A dense sum over the real input channels only never reads the padded lanes: NaN
      // there must not reach the output.
      if (!c.attrs.depthwise && !c.nchw_in && c.c % kChannelBlock != 0) {
        for (int64_t i = 0; i < xb.numel(); ++i) {
          if (i / (kChannelBlock * h * wd) % cb == cb - 1 &&
              i % kChannelBlock >= c.c % kChannelBlock) {
            xb.data_as<float>()[i] = std::nanf("");
          }
        }
      }
      std::vector<vm::Tensor> args{xb, pack_weights(c, w)};
      if (c.bias) args.push_back(pack_bias(c, b));
      const std::vector<double> want = reference(c, x, w, c.bias ? &b : nullptr, n, h, wd);
      vm::Tensor yb =
          run_op(lib, c.symbol, args, {n, channel_blocks(c.m), oh, ow, kChannelBlock}, kF32);
      vm::Tensor y = run_op(lib, "from" + std::to_string(c.m), {yb}, {n, c.m, oh, ow}, kF32);
      // F(4x4, 3x3) rounds in its transforms, by more the more terms a sum has (random
      // inputs: up to 8e-5 over 32 channels, 1.9e-4 over 64).
      const double tol = c.attrs.winograd == 4 ? 5e-6 * static_cast<double>(c.c) : 1e-5;
      expect_close(y, want, tol, tol, what);
    }
  }
}

TEST(OpsConvBlocked, RejectsWhatItCannotCompute) {
  const TensorType x{kF32, {kN, 2, kH, kW, kChannelBlock}};
  EXPECT_USER_ERROR(
      conv_blocked(TensorType{kF32, {kN, 32, kH, kW}}, TensorType{kF32, dims({2, 3, 3, 16})},
                   std::nullopt, {{3, 3}, {}, {}, {}, true}),
      "must be [N, channel blocks");
  EXPECT_USER_ERROR(conv_blocked(x, TensorType{kF32, dims({2, 3, 3, 16})}, std::nullopt,
                                 {{5, 5}, {}, {}, {}, true}),
                    "depthwise W must be");
  // Dense: W's input channels must fill X's blocks, or be an NCHW X's channels.
  EXPECT_USER_ERROR(conv_blocked(x, TensorType{kF32, dims({1, 33, 3, 3, 16})}, std::nullopt,
                                 {{3, 3}, {}, {}, {}, false}),
                    "dense W must be");
  EXPECT_USER_ERROR(conv_blocked(x, TensorType{kF32, dims({1, 32, 1, 1, 16})}, std::nullopt,
                                 {{3, 3}, {}, {}, {}, false}),
                    "dense W must be");
  EXPECT_USER_ERROR(
      conv_blocked(TensorType{kF32, {kN, 3, kH, kW}}, TensorType{kF32, dims({1, 4, 3, 3, 16})},
                   std::nullopt, {{3, 3}, {}, {}, {}, false}),
      "dense W must be");
  EXPECT_USER_ERROR(conv_blocked(x, TensorType{kF32, dims({2, 8, 3, 3, 16})}, std::nullopt,
                                 {{3, 3}, {}, {}, {}, false, 4}),
                    "whole blocks");
  EXPECT_USER_ERROR(
      conv_blocked(TensorType{kF32, dims({1, 3, 4, 4})}, TensorType{kF32, dims({1, 3, 7, 7, 16})},
                   std::nullopt, {{7, 7}, {}, {}, {}, false}),
      "window larger than input");
  // Winograd: 3x3 stride 1 only, U [alpha, alpha, MB, C, 16], a tile of 2 or 4.
  const TensorType u{kF32, dims({6, 6, 1, 32, 16})};
  EXPECT_USER_ERROR(conv_blocked(x, u, std::nullopt, {{3, 3}, {2, 2}, {}, {}, false, 1, 4}),
                    "stride 1");
  EXPECT_USER_ERROR(conv_blocked(x, u, std::nullopt, {{5, 5}, {}, {}, {}, false, 1, 4}),
                    "3x3 kernel");
  EXPECT_USER_ERROR(conv_blocked(x, TensorType{kF32, dims({6, 6, 1, 16, 16})}, std::nullopt,
                                 {{3, 3}, {}, {}, {}, false, 1, 4}),
                    "U must be");
  EXPECT_USER_ERROR(conv_blocked(x, u, std::nullopt, {{3, 3}, {}, {}, {}, false, 1, 3}),
                    "must be 2 or 4");
  EXPECT_USER_ERROR(from_blocked(x, 33), "do not fill");
  EXPECT_USER_ERROR(to_blocked(TensorType{kF32, {kN, kH, kW, kW}}), "static C");
}

}  // namespace
}  // namespace dynvm::ops::testing
