// conv and conv_transpose compiled for the host, against plain double loops: 1-D and 2-D,
// symbolic N/H/W (one kernel called at several sizes) and static shapes, strides 1/2,
// dilation 2, groups 1/2/depthwise, asymmetric pads, bias, non-default knobs; conv_transpose
// with stride 2 + output_padding, checked against a scatter-form reference (the kernel
// gathers). The builders' rejections of symbolic channels and bad attributes.
#include "kernels/ops/conv.h"

#include <algorithm>
#include <array>
#include <sstream>

#include "kernels/arith/analyzer.h"
#include "kernels/tir/printer.h"
#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

// A conv's attributes lifted to 2-D: a 1-D op is H = 1 with a one-tap kernel.
struct Attrs2d {
  int64_t sh = 1, sw = 1, ph0 = 0, pw0 = 0, ph1 = 0, pw1 = 0, dh = 1, dw = 1, oph = 0, opw = 0;
  int64_t groups = 1;
};

Attrs2d lift(const ConvAttrs& a, size_t rank) {
  auto get = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return v.empty() ? fallback : v[i];
  };
  Attrs2d r;
  r.groups = a.groups;
  if (rank == 2) {
    r.sh = get(a.strides, 0, 1), r.sw = get(a.strides, 1, 1);
    r.ph0 = get(a.pads, 0, 0), r.pw0 = get(a.pads, 1, 0);
    r.ph1 = get(a.pads, 2, 0), r.pw1 = get(a.pads, 3, 0);
    r.dh = get(a.dilations, 0, 1), r.dw = get(a.dilations, 1, 1);
    r.oph = get(a.output_padding, 0, 0), r.opw = get(a.output_padding, 1, 0);
  } else {
    r.sw = get(a.strides, 0, 1);
    r.pw0 = get(a.pads, 0, 0), r.pw1 = get(a.pads, 1, 0);
    r.dw = get(a.dilations, 0, 1);
    r.opw = get(a.output_padding, 0, 0);
  }
  return r;
}

// [N, C, W] -> [N, C, 1, W]; 4-D shapes unchanged.
vm::Shape as_2d(const vm::Shape& s) { return s.size() == 4 ? s : vm::Shape{s[0], s[1], 1, s[2]}; }
// The inverse for outputs of a 1-D op.
vm::Shape like_rank(const vm::Shape& s4, size_t rank) {
  return rank == 2 ? s4 : vm::Shape{s4[0], s4[1], s4[3]};
}

struct Result {
  vm::Shape shape;  // 2-D
  std::vector<double> values;
};

// Y[n, m, oh, ow] = b[m] + sum_{c, kh, kw} x[n, g*C/G + c, oh*s - p + kh*d, ...] w[m, c, kh, kw].
Result conv_ref(const vm::Tensor& x, vm::Shape xs, const vm::Tensor& w, vm::Shape ws,
                const vm::Tensor* b, const Attrs2d& a) {
  xs = as_2d(xs), ws = as_2d(ws);
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const int64_t m = ws[0], cig = ws[1], kh = ws[2], kw = ws[3], mog = m / a.groups;
  const int64_t oh = (h + a.ph0 + a.ph1 - a.dh * (kh - 1) - 1) / a.sh + 1;
  const int64_t ow = (wd + a.pw0 + a.pw1 - a.dw * (kw - 1) - 1) / a.sw + 1;
  Result r{{n, m, oh, ow}, {}};
  for (int64_t in = 0; in < n; ++in)
    for (int64_t im = 0; im < m; ++im)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double acc = b ? at(*b, im) : 0.0;
          for (int64_t ic = 0; ic < cig; ++ic)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t iy = y * a.sh - a.ph0 + ky * a.dh, ix = xo * a.sw - a.pw0 + kx * a.dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                int64_t ch = im / mog * cig + ic;
                acc += at(x, ((in * c + ch) * h + iy) * wd + ix) *
                       at(w, ((im * cig + ic) * kh + ky) * kw + kx);
              }
          r.values.push_back(acc);
        }
  return r;
}

// ConvTranspose by scattering every input element through every kernel tap.
Result conv_transpose_ref(const vm::Tensor& x, vm::Shape xs, const vm::Tensor& w, vm::Shape ws,
                          const vm::Tensor* b, const Attrs2d& a) {
  xs = as_2d(xs), ws = as_2d(ws);
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const int64_t mog = ws[1], kh = ws[2], kw = ws[3], m = mog * a.groups, cig = c / a.groups;
  const int64_t oh = a.sh * (h - 1) + a.oph + a.dh * (kh - 1) + 1 - a.ph0 - a.ph1;
  const int64_t ow = a.sw * (wd - 1) + a.opw + a.dw * (kw - 1) + 1 - a.pw0 - a.pw1;
  Result r{{n, m, oh, ow}, std::vector<double>(static_cast<size_t>(n * m * oh * ow), 0.0)};
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < wd; ++ix)
          for (int64_t j = 0; j < mog; ++j)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t y = iy * a.sh + ky * a.dh - a.ph0, xo = ix * a.sw + kx * a.dw - a.pw0;
                if (y < 0 || y >= oh || xo < 0 || xo >= ow) continue;
                int64_t om = ic / cig * mog + j;
                r.values[static_cast<size_t>(((in * m + om) * oh + y) * ow + xo)] +=
                    at(x, ((in * c + ic) * h + iy) * wd + ix) *
                    at(w, ((ic * mog + j) * kh + ky) * kw + kx);
              }
  if (b) {
    for (size_t i = 0; i < r.values.size(); ++i) {
      r.values[i] += at(*b, static_cast<int64_t>(i) / (oh * ow) % m);
    }
  }
  return r;
}

// One op of the library: how it was built, so that a check can rebuild its reference.
struct ConvCase {
  std::string symbol;
  bool transpose = false;
  TensorType x;  // possibly symbolic: only its rank and channels are used here
  vm::Shape w;
  bool bias = false;
  ConvAttrs attrs;
  KnobValues knobs;
};

OpInstance build(const ConvCase& c) {
  TensorType w{kF32, dims(c.w)};
  std::optional<TensorType> b;
  if (c.bias) b = TensorType{kF32, dims({c.transpose ? c.w[1] * c.attrs.groups : c.w[0]})};
  return c.transpose ? conv_transpose(c.x, w, b, c.attrs) : conv(c.x, w, b, c.attrs);
}

const arith::Var kN("n"), kH("h"), kW("w"), kQ("q");

// Every case, in one library (LLVM's O3 dominates the test's time).
std::vector<ConvCase> cases() {
  auto sym2 = [](int64_t c) { return TensorType{kF32, {kN, c, kH, kW}}; };
  auto sym1 = [](int64_t c) { return TensorType{kF32, {kN, c, kW}}; };
  auto fixed = [](const vm::Shape& s) { return TensorType{kF32, dims(s)}; };
  return {
      {"conv2d_3x3_pad1_bias_sym",
       false,
       sym2(3),
       {8, 3, 3, 3},
       true,
       {{}, {1, 1, 1, 1}, {}, 1, {}},
       {}},
      {"conv2d_s2_asym_pads_sym",
       false,
       sym2(4),
       {6, 4, 3, 2},
       false,
       {{2, 2}, {1, 0, 2, 1}, {}, 1, {}},
       {}},
      // A fixed height with a symbolic batch and width (PP-OCR's text lines): the batch,
      // channel blocks and rows fuse into one parallel loop.
      {"conv2d_static_h_sym_nw",
       false,
       TensorType{kF32, {kN, 20, 6, kW}},
       {20, 1, 5, 5},
       true,
       {{}, {2, 2, 2, 2}, {}, 20, {}},
       {}},
      // The residue variant's form of the first case (kernels/dispatch: w -> 16 q).
      {"conv2d_3x3_pad1_w16q",
       false,
       TensorType{kF32, {kN, 3, kH, arith::Expr(kQ) * 16}},
       {8, 3, 3, 3},
       true,
       {{}, {1, 1, 1, 1}, {}, 1, {}},
       {}},
      {"conv2d_knobs_sym",
       false,
       sym2(5),
       {7, 5, 3, 3},
       true,
       {{1, 2}, {1, 1, 0, 2}, {}, 1, {}},
       {{"oc_block", 4}, {"ow_block", 8}, {"oh_block", 2}, {"unroll_kw", 0}, {"parallel", 0}}},
      {"conv2d_dil2_groups2",
       false,
       fixed({2, 4, 9, 11}),
       {6, 2, 3, 3},
       true,
       {{}, {2, 1, 2, 1}, {2, 2}, 2, {}},
       {}},
      {"conv2d_depthwise_s2",
       false,
       fixed({1, 7, 17, 17}),
       {7, 1, 3, 3},
       true,
       {{2, 2}, {1, 1, 1, 1}, {}, 7, {}},
       {}},
      // Stride 3 along a static width: the padded rows split in three phases, taps 5 wide
      // (phase and offset per tap), asymmetric pads, a symbolic height; non-default knobs.
      {"conv2d_depthwise_s3_k5_phases",
       false,
       TensorType{kF32, {kN, 5, kH, 23}},
       {5, 1, 5, 5},
       true,
       {{3, 3}, {2, 1, 0, 2}, {}, 5, {}},
       {{"oc_block", 2}, {"oh_block", 4}, {"ow_block", 8}}},
      {"conv2d_depthwise_mult2_sym",
       false,
       sym2(3),
       {6, 1, 3, 3},
       false,
       {{}, {1, 1, 1, 1}, {}, 3, {}},
       {}},
      {"conv2d_1x1", false, fixed({1, 16, 7, 7}), {32, 16, 1, 1}, false, {}, {}},
      // Symbolic width: the flattened form (h*w as one axis, rounded up to 16 once).
      {"conv2d_1x1_sym", false, sym2(16), {20, 16, 1, 1}, true, {}, {}},
      {"conv2d_1x1_groups_sym",
       false,
       sym2(6),
       {8, 3, 1, 1},
       true,
       {{}, {}, {}, 2, {}},
       {{"oc_block", 4}, {"ow_block", 8}}},
      {"conv2d_resnet_like",
       false,
       fixed({1, 16, 14, 14}),
       {16, 16, 3, 3},
       true,
       {{}, {1, 1, 1, 1}, {}, 1, {}},
       {}},
      // Unit strides over a symbolic width: the padded flat rows (dilation 2, two groups,
      // asymmetric pads; non-default channel and position blocks).
      {"conv2d_flat_rows_dil2_groups2_sym",
       false,
       sym2(4),
       {6, 2, 3, 3},
       true,
       {{}, {2, 1, 0, 3}, {2, 2}, 2, {}},
       {}},
      {"conv2d_flat_rows_knobs_sym",
       false,
       sym2(5),
       {7, 5, 3, 5},
       false,
       {{}, {1, 2, 1, 2}, {}, 1, {}},
       {{"oc_block", 4}, {"ow_block", 8}, {"parallel", 1}}},
      {"conv2d_static_width_tail",
       false,
       fixed({2, 8, 5, 37}),
       {16, 8, 3, 3},
       true,
       {{}, {1, 1, 1, 1}, {}, 1, {}},
       {}},
      {"conv2d_static_row_blocks",
       false,
       fixed({1, 8, 7, 19}),
       {12, 8, 3, 3},
       false,
       {{}, {0, 1, 2, 1}, {}, 1, {}},
       {{"oh_block", 4}, {"oc_block", 8}}},
      // Kernels within their strides, no pads: patches copied once, then a pointwise conv
      // over them (a ViT's patch embedding, a rectangular kernel short of its stride, 1-D,
      // a ResNet's 1x1 stride-2 shortcut).
      {"conv2d_patch_sym", false, sym2(3), {20, 3, 4, 4}, true, {{4, 4}, {}, {}, 1, {}}, {}},
      {"conv2d_patch_rect",
       false,
       fixed({2, 5, 9, 13}),
       {6, 5, 2, 3},
       false,
       {{3, 3}, {}, {}, 1, {}},
       {{"oc_block", 2}, {"ow_block", 8}}},
      {"conv1d_patch_sym", false, sym1(4), {8, 4, 5}, true, {{5}, {}, {}, 1, {}}, {}},
      // A framing conv (an STFT's): windows of two hops, the patches overlapping.
      {"conv1d_frames_sym", false, sym1(1), {20, 1, 32}, true, {{16}, {}, {}, 1, {}}, {}},
      {"conv2d_1x1_s2_sym", false, sym2(8), {16, 8, 1, 1}, false, {{2, 2}, {}, {}, 1, {}}, {}},
      {"conv1d_s2_dil2_sym", false, sym1(5), {3, 5, 3}, true, {{2}, {1, 2}, {2}, 1, {}}, {}},
      // Unit strides over a symbolic width: the flat template over the row (pointwise: over
      // X itself; else over the padded input), in place with a masked tail.
      {"conv1d_pointwise_sym", false, sym1(20), {24, 20, 1}, true, {}, {}},
      {"conv1d_k3_dil2_groups2_sym",
       false,
       sym1(6),
       {8, 3, 3},
       true,
       {{1}, {2, 2}, {2}, 2, {}},
       {}},
      {"conv1d_k3_asym_pads_sym", false, sym1(5), {7, 5, 3}, false, {{1}, {0, 2}, {}, 1, {}}, {}},
      {"conv1d_groups_static",
       false,
       fixed({3, 4, 17}),
       {8, 2, 5},
       false,
       {{}, {0, 3}, {}, 2, {}},
       {}},
      {"conv_t2d_s2_outpad",
       true,
       fixed({1, 4, 5, 7}),
       {4, 3, 3, 3},
       true,
       {{2, 2}, {1, 1, 1, 1}, {}, 1, {1, 1}},
       {}},
      {"conv_t2d_groups_sym",
       true,
       sym2(4),
       {4, 2, 3, 2},
       false,
       {{2, 1}, {0, 1, 1, 0}, {1, 2}, 2, {1, 0}},
       {}},
      {"conv_t1d_s3_sym", true, sym1(3), {3, 2, 4}, true, {{3}, {1, 2}, {}, 1, {2}}, {}},
      // Kernel == stride, no pads: one tap per output (the upsampling form).
      {"conv_t2d_one_tap_sym", true, sym2(4), {4, 3, 2, 2}, true, {{2, 2}, {}, {}, 1, {}}, {}},
      {"conv_t2d_one_tap_groups",
       true,
       sym2(4),
       {4, 2, 3, 1},
       false,
       {{3, 1}, {}, {}, 2, {}},
       {{"parallel", 0}}},
      {"conv_t1d_one_tap", true, sym1(3), {3, 5, 2}, true, {{2}, {}, {}, 1, {}}, {}},
      // 8 output channels x 4 taps: register tiles of 4 channels.
      {"conv_t2d_one_tap_blocked", true, sym2(4), {4, 8, 2, 2}, true, {{2, 2}, {}, {}, 1, {}}, {}},
      // Several taps per phase, pads not a multiple of the stride: a GAN's k=4 s=2 p=1, a
      // vocoder's k=8 s=4 p=2 (1-D), a kernel past a multiple of the stride (k=5 s=2, taps
      // 5 of 6 weigh something) with pads that shrink the output, output padding.
      {"conv_t2d_k4s2p1", true, sym2(4), {4, 8, 4, 4}, true, {{2, 2}, {1, 1, 1, 1}, {}, 1, {}}, {}},
      {"conv_t1d_k8s4p2", true, sym1(6), {6, 8, 8}, true, {{4}, {2, 2}, {}, 1, {}}, {}},
      {"conv_t1d_k5s2p3_outpad", true, sym1(3), {3, 4, 5}, false, {{2}, {3, 2}, {}, 1, {1}}, {}},
  };
}

// Builds only the named cases into one library: ctest runs each test in its own process,
// and LLVM's O3 dominates the test's time.
OpLibrary library(const std::vector<std::string>& symbols) {
  std::vector<OpToBuild> ops;
  for (const ConvCase& c : cases()) {
    if (std::find(symbols.begin(), symbols.end(), c.symbol) != symbols.end()) {
      ops.push_back({c.symbol, build(c), c.knobs});
    }
  }
  return OpLibrary::build(ops);
}

// Runs the case named `symbol` on a random input of shape `xs`, checks every element.
void check(const OpLibrary& lib, const std::string& symbol, const vm::Shape& xs,
           std::mt19937& rng) {
  for (const ConvCase& c : cases()) {
    if (c.symbol != symbol) continue;
    const size_t rank = c.x.shape.size() - 2;
    vm::Tensor x = random_tensor(xs, kF32, rng);
    vm::Tensor w = random_tensor(c.w, kF32, rng);
    int64_t m = c.transpose ? c.w[1] * c.attrs.groups : c.w[0];
    vm::Tensor b = random_tensor({m}, kF32, rng);
    Attrs2d a = lift(c.attrs, rank);
    Result want = c.transpose ? conv_transpose_ref(x, xs, w, c.w, c.bias ? &b : nullptr, a)
                              : conv_ref(x, xs, w, c.w, c.bias ? &b : nullptr, a);
    std::vector<vm::Tensor> inputs = {x, w};
    if (c.bias) inputs.push_back(b);
    vm::Tensor y = run_op(lib, symbol, inputs, like_rank(want.shape, rank), kF32);
    // f32 sums of up to ~150 products of values in [-1, 1).
    expect_close(y, want.values, 1e-4, 1e-5, symbol + " " + shape_name(xs));
    return;
  }
  FAIL() << "no case " << symbol;
}

TEST(Convolutions, SymbolicConv2dOneKernelAtSeveralSizes) {
  OpLibrary lib = library({"conv2d_3x3_pad1_bias_sym", "conv2d_s2_asym_pads_sym"});
  std::mt19937 rng(21);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1, 1}, {2, 3, 7, 17}, {1, 3, 17, 3}}) {
    check(lib, "conv2d_3x3_pad1_bias_sym", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 4, 1, 2}, {2, 4, 7, 7}, {1, 4, 17, 9}}) {
    check(lib, "conv2d_s2_asym_pads_sym", s, rng);
  }
}

// A symbolic width the op would like a multiple of 16 output columns (times the stride):
// the variant for such widths tiles the output itself, with no rounded workspace.
TEST(Convolutions, WidthResidueVariantTilesTheOutputDirectly) {
  auto multiples = [](const ConvCase& c) {
    OpInstance op = build(c);
    return op.preferred_multiples;
  };
  for (const ConvCase& c : cases()) {
    if (c.symbol == "conv2d_3x3_pad1_bias_sym") {
      ASSERT_EQ(multiples(c).size(), 1u);
      EXPECT_EQ(multiples(c)[0].first.id(), kW.id());
      EXPECT_EQ(multiples(c)[0].second, 16);
    }
    if (c.symbol == "conv2d_3x3_pad1_w16q") {
      EXPECT_TRUE(multiples(c).empty());  // already a multiple: nothing rounded
      EXPECT_TRUE(arith::provably_divisible(build(c).outputs[0]->shape()[3], 16));
    }
  }
  auto conv_multiples = [](std::vector<int64_t> strides, std::vector<int64_t> pads) {
    OpInstance op = conv({kF32, {kN, 3, kH, kW}}, {kF32, dims({8, 3, 3, 3})}, std::nullopt,
                         {strides, pads, {}, 1, {}});
    return op.preferred_multiples;
  };
  ASSERT_EQ(conv_multiples({2, 2}, {1, 1, 1, 1}).size(), 1u);
  EXPECT_EQ(conv_multiples({2, 2}, {1, 1, 1, 1})[0].second, 32);  // ceil(32 q / 2) = 16 q
  EXPECT_TRUE(conv_multiples({1, 1}, {0, 0, 0, 0}).empty());      // 16 q - 2: never
  OpLibrary lib = library({"conv2d_3x3_pad1_w16q"});
  std::mt19937 rng(27);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1, 16}, {2, 3, 5, 32}, {1, 3, 7, 64}}) {
    check(lib, "conv2d_3x3_pad1_w16q", s, rng);
  }
}

TEST(Convolutions, StaticRowsWithSymbolicBatchAndWidth) {
  OpLibrary lib = library({"conv2d_static_h_sym_nw"});
  std::mt19937 rng(28);
  for (const vm::Shape& s :
       std::vector<vm::Shape>{{1, 20, 6, 1}, {3, 20, 6, 17}, {2, 20, 6, 32}, {1, 20, 6, 80}}) {
    check(lib, "conv2d_static_h_sym_nw", s, rng);
  }
}

TEST(Convolutions, KnobsChangeTheScheduleNotTheValues) {
  OpLibrary lib = library({"conv2d_knobs_sym"});
  std::mt19937 rng(22);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 5, 3, 1}, {2, 5, 9, 17}, {1, 5, 7, 33}}) {
    check(lib, "conv2d_knobs_sym", s, rng);
  }
}

TEST(Convolutions, DilationGroupsAndDepthwise) {
  OpLibrary lib = library({"conv2d_dil2_groups2", "conv2d_depthwise_s2",
                           "conv2d_depthwise_s3_k5_phases", "conv2d_depthwise_mult2_sym"});
  std::mt19937 rng(23);
  check(lib, "conv2d_dil2_groups2", {2, 4, 9, 11}, rng);
  check(lib, "conv2d_depthwise_s2", {1, 7, 17, 17}, rng);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 5, 4, 23}, {2, 5, 13, 23}}) {
    check(lib, "conv2d_depthwise_s3_k5_phases", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1, 1}, {2, 3, 7, 17}}) {
    check(lib, "conv2d_depthwise_mult2_sym", s, rng);
  }
}

TEST(Convolutions, PointwiseOverASymbolicWidthRunsFlat) {
  OpLibrary lib = library({"conv2d_1x1_sym", "conv2d_1x1_groups_sym"});
  std::mt19937 rng(26);
  // h*w of 1, under one vector, a multiple of 16 (3x16) and rows of odd widths (7x17, 5x25).
  for (const vm::Shape& s :
       std::vector<vm::Shape>{{1, 16, 1, 1}, {2, 16, 3, 5}, {1, 16, 3, 16}, {2, 16, 7, 17}}) {
    check(lib, "conv2d_1x1_sym", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 6, 1, 3}, {3, 6, 5, 25}}) {
    check(lib, "conv2d_1x1_groups_sym", s, rng);
  }
}

// Unit-stride convs over a symbolic width run along the padded input's flat rows: the
// columns past each row's end are computed and dropped, the last row's reach into the extra
// zero row; widths of 1 to 33 (under, at and over one vector), one row and many.
TEST(Convolutions, UnitStrideOverASymbolicWidthRunsAlongFlatRows) {
  for (const ConvCase& c : cases()) {
    if (c.symbol.rfind("conv2d_flat_rows", 0) == 0 || c.symbol == "conv2d_3x3_pad1_bias_sym") {
      EXPECT_NE(build(c).name.find("_flat_rows"), std::string::npos) << c.symbol;
    }
  }
  OpLibrary lib = library({"conv2d_flat_rows_dil2_groups2_sym", "conv2d_flat_rows_knobs_sym"});
  std::mt19937 rng(29);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 4, 4, 1}, {2, 4, 5, 14}, {1, 4, 9, 33}}) {
    check(lib, "conv2d_flat_rows_dil2_groups2_sym", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 5, 1, 1}, {2, 5, 3, 16}, {1, 5, 11, 21}}) {
    check(lib, "conv2d_flat_rows_knobs_sym", s, rng);
  }
}

TEST(Convolutions, StaticLayersWidthTailsAndRowBlocks) {
  OpLibrary lib = library(
      {"conv2d_1x1", "conv2d_resnet_like", "conv2d_static_width_tail", "conv2d_static_row_blocks"});
  std::mt19937 rng(24);
  check(lib, "conv2d_1x1", {1, 16, 7, 7}, rng);
  check(lib, "conv2d_resnet_like", {1, 16, 14, 14}, rng);
  check(lib, "conv2d_static_width_tail", {2, 8, 5, 37}, rng);
  check(lib, "conv2d_static_row_blocks", {1, 8, 7, 19}, rng);
}

TEST(Convolutions, Conv1d) {
  OpLibrary lib = library({"conv1d_s2_dil2_sym", "conv1d_groups_static"});
  std::mt19937 rng(25);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 5, 2}, {2, 5, 17}, {3, 5, 64}}) {
    check(lib, "conv1d_s2_dil2_sym", s, rng);
  }
  check(lib, "conv1d_groups_static", {3, 4, 17}, rng);
}

// Widths below, at and past a vector of 16 output positions, and a batch of 2: the masked
// tail of each channel block writes exactly the positions the row has.
TEST(Convolutions, UnitStrideConv1dOverASymbolicWidthRunsInPlace) {
  const std::vector<std::string> symbols = {"conv1d_pointwise_sym", "conv1d_k3_dil2_groups2_sym",
                                            "conv1d_k3_asym_pads_sym"};
  for (const ConvCase& c : cases()) {
    if (std::find(symbols.begin(), symbols.end(), c.symbol) == symbols.end()) continue;
    // No workspace rounded to whole vectors (the other form's "Conv" and its padded copy).
    std::istringstream lowered(tir::to_string(lower_op(build(c), {}, c.symbol)));
    for (std::string line; std::getline(lowered, line);) {
      if (line.find("workspace") != std::string::npos) {
        EXPECT_EQ(line.find("floordiv"), std::string::npos) << c.symbol << ": " << line;
      }
    }
  }
  OpLibrary lib = library(symbols);
  std::mt19937 rng(29);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 0, 1}, {2, 0, 7}, {1, 0, 16}, {2, 0, 41}}) {
    check(lib, "conv1d_pointwise_sym", {s[0], 20, s[2]}, rng);
    check(lib, "conv1d_k3_dil2_groups2_sym", {s[0], 6, s[2]}, rng);
    check(lib, "conv1d_k3_asym_pads_sym", {s[0], 5, s[2]}, rng);
  }
}

// Output positions past a vector (16) and a masked tail, inputs that are not a multiple of
// the stride (the conv drops the rest), a batch of 2.
TEST(Convolutions, KernelsWithinTheirStridesRunOverCopiedPatches) {
  OpLibrary lib = library({"conv2d_patch_sym", "conv2d_patch_rect", "conv1d_patch_sym",
                           "conv2d_1x1_s2_sym", "conv1d_frames_sym"});
  std::mt19937 rng(29);
  for (const vm::Shape& s :
       std::vector<vm::Shape>{{1, 3, 4, 4}, {2, 3, 9, 23}, {1, 3, 22, 70}, {1, 3, 64, 64}}) {
    check(lib, "conv2d_patch_sym", s, rng);
  }
  check(lib, "conv2d_patch_rect", {2, 5, 9, 13}, rng);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 4, 5}, {2, 4, 39}, {1, 4, 404}}) {
    check(lib, "conv1d_patch_sym", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 8, 1, 1}, {2, 8, 7, 9}, {1, 8, 28, 40}}) {
    check(lib, "conv2d_1x1_s2_sym", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 32}, {2, 1, 100}, {1, 1, 575}}) {
    check(lib, "conv1d_frames_sym", s, rng);
  }
}

TEST(Convolutions, ConvTransposeWithStrideAndOutputPadding) {
  OpLibrary lib = library({"conv_t2d_s2_outpad", "conv_t2d_groups_sym", "conv_t1d_s3_sym"});
  std::mt19937 rng(26);
  check(lib, "conv_t2d_s2_outpad", {1, 4, 5, 7}, rng);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 4, 1, 1}, {2, 4, 3, 7}, {1, 4, 7, 3}}) {
    check(lib, "conv_t2d_groups_sym", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1}, {2, 3, 7}}) {
    check(lib, "conv_t1d_s3_sym", s, rng);
  }
}

TEST(Convolutions, ConvTransposeByPhaseWithSeveralTapsEach) {
  OpLibrary lib = library({"conv_t2d_k4s2p1", "conv_t1d_k8s4p2", "conv_t1d_k5s2p3_outpad"});
  std::mt19937 rng(28);
  for (const vm::Shape& s :
       std::vector<vm::Shape>{{1, 4, 1, 1}, {2, 4, 3, 7}, {1, 4, 5, 16}, {1, 4, 2, 37}}) {
    check(lib, "conv_t2d_k4s2p1", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 6, 1}, {2, 6, 5}, {1, 6, 33}}) {
    check(lib, "conv_t1d_k8s4p2", s, rng);
  }
  // O = (I - 1)*2 + 1 (output padding) + 5 - 3 - 2 = 2I - 1.
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 2}, {2, 3, 9}, {1, 3, 20}}) {
    check(lib, "conv_t1d_k5s2p3_outpad", s, rng);
  }
}

TEST(Convolutions, ConvTransposeWithOneTapPerOutput) {
  OpLibrary lib = library({"conv_t2d_one_tap_sym", "conv_t2d_one_tap_groups", "conv_t1d_one_tap",
                           "conv_t2d_one_tap_blocked"});
  std::mt19937 rng(27);
  // Input widths below, at and past one vector of columns (16), and a batch of 2.
  for (const vm::Shape& s :
       std::vector<vm::Shape>{{1, 4, 1, 1}, {2, 4, 3, 7}, {1, 4, 5, 16}, {1, 4, 2, 37}}) {
    check(lib, "conv_t2d_one_tap_sym", s, rng);
    check(lib, "conv_t2d_one_tap_groups", s, rng);
    check(lib, "conv_t2d_one_tap_blocked", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1}, {2, 3, 17}, {1, 3, 40}}) {
    check(lib, "conv_t1d_one_tap", s, rng);
  }
}

// Y[n, m, z, y, x] = b[m] + sum_{c, kd, kh, kw} X[n, g*C/G + c, z*s - p + kd*d, ...] W[m, c, ...],
// for a 3-D conv (the 2-D reference above lifts 1-D ops only).
std::vector<double> conv3d_ref(const vm::Tensor& x, const vm::Shape& xs, const vm::Tensor& w,
                               const vm::Shape& ws, const vm::Tensor& b, const ConvAttrs& a,
                               vm::Shape* out) {
  const int64_t n = xs[0], c = xs[1], cig = ws[1], m = ws[0], mog = m / a.groups;
  std::array<int64_t, 3> in{xs[2], xs[3], xs[4]}, k{ws[2], ws[3], ws[4]}, o{};
  for (size_t d = 0; d < 3; ++d) {
    o[d] = (in[d] + a.pads[d] + a.pads[d + 3] - a.dilations[d] * (k[d] - 1) - 1) / a.strides[d] + 1;
  }
  *out = {n, m, o[0], o[1], o[2]};
  std::vector<double> y;
  for (int64_t in_ = 0; in_ < n; ++in_)
    for (int64_t im = 0; im < m; ++im)
      for (int64_t z = 0; z < o[0]; ++z)
        for (int64_t yy = 0; yy < o[1]; ++yy)
          for (int64_t xx = 0; xx < o[2]; ++xx) {
            double acc = at(b, im);
            for (int64_t ic = 0; ic < cig; ++ic)
              for (int64_t kz = 0; kz < k[0]; ++kz)
                for (int64_t ky = 0; ky < k[1]; ++ky)
                  for (int64_t kx = 0; kx < k[2]; ++kx) {
                    const int64_t iz = z * a.strides[0] - a.pads[0] + kz * a.dilations[0];
                    const int64_t iy = yy * a.strides[1] - a.pads[1] + ky * a.dilations[1];
                    const int64_t ix = xx * a.strides[2] - a.pads[2] + kx * a.dilations[2];
                    if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2]) {
                      continue;
                    }
                    const int64_t ch = im / mog * cig + ic;
                    acc += at(x, (((in_ * c + ch) * in[0] + iz) * in[1] + iy) * in[2] + ix) *
                           at(w, (((im * cig + ic) * k[0] + kz) * k[1] + ky) * k[2] + kx);
                  }
            y.push_back(acc);
          }
  return y;
}

// 3-D convs (video, volumes): the NCHW template tiles H and W like a 2-D conv's rows and
// columns, with a loop over depths around them (in parallel when the depth is symbolic).
// Symbolic D, H and W, one kernel at several sizes; strides, asymmetric pads, dilation,
// groups; and a static shape.
TEST(Convolutions, Conv3dOverSymbolicDepthHeightAndWidth) {
  arith::Var d("d");
  const ConvAttrs strided{{1, 2, 1}, {1, 0, 2, 0, 1, 1}, {2, 1, 1}, 2, {}};
  const ConvAttrs plain{{1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1, {}};
  const vm::Shape w1{6, 2, 3, 3, 2}, w2{16, 3, 3, 3, 3};
  auto op = [](const TensorType& x, const vm::Shape& w, const ConvAttrs& a) {
    return conv(x, {kF32, dims(w)}, TensorType{kF32, dims({w[0]})}, a);
  };
  OpLibrary lib = OpLibrary::build({
      {"conv3d_strided_groups_sym", op({kF32, {kN, 4, d, kH, kW}}, w1, strided)},
      {"conv3d_pad1_sym", op({kF32, {kN, 3, d, kH, kW}}, w2, plain)},
      {"conv3d_pad1_static", op({kF32, dims({1, 3, 4, 6, 19})}, w2, plain)},
  });
  std::mt19937 rng(33);
  auto check3d = [&](const std::string& symbol, const vm::Shape& xs, const vm::Shape& ws,
                     const ConvAttrs& a) {
    vm::Tensor x = random_tensor(xs, kF32, rng), w = random_tensor(ws, kF32, rng),
               b = random_tensor({ws[0]}, kF32, rng);
    vm::Shape out;
    std::vector<double> want = conv3d_ref(x, xs, w, ws, b, a, &out);
    vm::Tensor y = run_op(lib, symbol, {x, w, b}, out, kF32);
    expect_close(y, want, 1e-4, 1e-5, symbol + " " + shape_name(xs));
  };
  for (const vm::Shape& s :
       std::vector<vm::Shape>{{1, 4, 4, 5, 4}, {2, 4, 6, 9, 17}, {1, 4, 5, 2, 33}}) {
    check3d("conv3d_strided_groups_sym", s, w1, strided);
  }
  for (const vm::Shape& s :
       std::vector<vm::Shape>{{1, 3, 1, 1, 1}, {2, 3, 5, 7, 18}, {1, 3, 9, 4, 40}}) {
    check3d("conv3d_pad1_sym", s, w2, plain);
  }
  check3d("conv3d_pad1_static", {1, 3, 4, 6, 19}, w2, plain);
}

TEST(ConvBuilders, OutputDimsAreArithExpressions) {
  OpInstance op = conv({kF32, {kN, 3, kH, kW}}, {kF32, dims({8, 3, 3, 3})}, std::nullopt,
                       {{2, 2}, {1, 1, 1, 1}, {}, 1, {}});
  const std::vector<arith::Expr>& s = op.outputs[0]->shape();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_TRUE(s[1].is_int_imm() && s[1].int_value() == 8);
  EXPECT_TRUE(arith::uses_var(s[2], kH.id()));
  EXPECT_TRUE(arith::uses_var(s[3], kW.id()));
  EXPECT_EQ(op.name, "conv2d_f32");
}

TEST(ConvBuilders, RejectSymbolicChannelsAndBadAttributes) {
  arith::Var c("c");
  TensorType w{kF32, dims({8, 3, 3, 3})};
  EXPECT_USER_ERROR(conv({kF32, {kN, c, kH, kW}}, w, std::nullopt),
                    "X's channels must be constant");
  EXPECT_USER_ERROR(conv({kF32, {kN, 3, kH, kW}}, {kF32, {8, 3, c, 3}}, std::nullopt),
                    "W's dims must be constant");
  EXPECT_USER_ERROR(conv({kF32, {kN, 4, kH, kW}}, w, std::nullopt), "must be C_in/groups");
  EXPECT_USER_ERROR(conv({kF32, {kN, 3, kH, kW}}, w, std::nullopt, {{}, {}, {}, 2, {}}),
                    "must be >= 1 and divide C_in");
  EXPECT_USER_ERROR(conv({kF32, {kN, 3, kH, kW}}, w, std::nullopt, {{1}, {}, {}, 1, {}}),
                    "strides has 1 values, want 2");
  EXPECT_USER_ERROR(conv({kF32, dims({1, 3, 2, 2})}, w, std::nullopt), "window larger than input");
  EXPECT_USER_ERROR(conv({kF32, {kN, 3, kH, kW}}, w, std::nullopt, {{}, {}, {}, 1, {1, 1}}),
                    "output_padding is for conv_transpose");
  EXPECT_USER_ERROR(conv({kI64, {kN, 3, kH, kW}}, w, std::nullopt), "must be f32 or f64");
  EXPECT_USER_ERROR(conv_transpose({kF32, {kN, 3, kH, kW}}, {kF32, dims({3, 2, 3, 3})},
                                   std::nullopt, {{2, 2}, {}, {}, 1, {2, 0}}),
                    "output_padding must be below the stride");
}

}  // namespace
}  // namespace dynvm::ops::testing
