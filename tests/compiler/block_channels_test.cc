// block_channels: a depthwise-separable block with squeeze-and-excitation (depthwise 3x3
// stride 2, HardSwish, GlobalAveragePool, Sigmoid, Mul, pointwise conv, a per-channel Add)
// moves into the blocked layout with one conversion in and one out; the whole pipeline's
// values against double loops at sizes from 1x1 up (odd widths, a batch). A ResNet-style
// stem and residual block (a 7x7 stride-2 conv over the 3-channel NCHW input, MaxPool, dense
// 3x3 convs, a residual Add, AveragePool) moves with no conversion in, against double loops;
// a model whose dense convs would compute mostly padded lanes is left alone.
#include "compiler/passes/block_channels.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <sstream>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/fuse_ops.h"
#include "compiler/passes/infer_types.h"
#include "compiler/pipeline.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

constexpr int64_t kC = 20, kM = 24;

float weight(int64_t i, int64_t salt) {
  return static_cast<float>(((i * 7 + salt * 5) % 23) - 11) / 16.0f;
}

std::string constant(const std::vector<int64_t>& shape, int64_t salt) {
  std::ostringstream os;
  int64_t n = 1;
  os << "const(f32[";
  for (size_t i = 0; i < shape.size(); ++i) {
    os << (i ? ", " : "") << shape[i];
    n *= shape[i];
  }
  os << "], [";
  for (int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << weight(i, salt);
  os << "])";
  return os.str();
}

std::string block(bool depthwise) {
  std::ostringstream os;
  os << "dim n: 1..8\ndim h: 1..64\ndim w: 1..64\nfn @main(%x: f32[n, " << kC << ", h, w]) {\n";
  if (depthwise) {
    os << "  %a = Conv(%x, " << constant({kC, 1, 3, 3}, 1) << ", " << constant({kC}, 2)
       << ") {group=" << kC << ", pads=[1, 1, 1, 1], strides=[2, 2]}\n";
  } else {
    os << "  %a = Conv(%x, " << constant({kC, kC, 3, 3}, 1) << ", " << constant({kC}, 2)
       << ") {pads=[1, 1, 1, 1], strides=[2, 2]}\n";
  }
  os << "  %b = HardSwish(%a)\n"
     << "  %p = GlobalAveragePool(%b)\n"
     << "  %s = Sigmoid(%p)\n"
     << "  %c = Mul(%b, %s)\n"
     << "  %d = Conv(%c, " << constant({kM, kC, 1, 1}, 3) << ", " << constant({kM}, 4) << ")\n"
     << "  %e = Add(%d, " << constant({kM, 1, 1}, 5) << ")\n"
     << "  return %e\n}\n";
  return os.str();
}

std::map<std::string, int> call_counts(const Module& m) {
  std::map<std::string, int> counts;
  for (Expr e = m.find_function("main")->body; e.kind() == ExprKind::kLet; e = e->operands[2]) {
    if (e->operands[1].kind() == ExprKind::kCall) ++counts[e->operands[1]->name];
  }
  return counts;
}

double hardswish(double v) { return v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0; }

// The block's definition over NCHW x, in double.
std::vector<double> reference(const vm::Tensor& x, int64_t n, int64_t h, int64_t w) {
  const int64_t oh = (h - 1) / 2 + 1, ow = (w - 1) / 2 + 1;
  auto xv = [&](int64_t i, int64_t c, int64_t y, int64_t xx) {
    return double{x.data_as<float>()[((i * kC + c) * h + y) * w + xx]};
  };
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> b(static_cast<size_t>(kC * oh * ow));
    std::vector<double> scale(kC);
    for (int64_t c = 0; c < kC; ++c) {
      double sum = 0;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = weight(c, 2);
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = y * 2 - 1 + ky, ix = xx * 2 - 1 + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              acc += xv(i, c, iy, ix) * weight((c * 3 + ky) * 3 + kx, 1);
            }
          b[static_cast<size_t>((c * oh + y) * ow + xx)] = hardswish(acc);
          sum += hardswish(acc);
        }
      scale[static_cast<size_t>(c)] = 1.0 / (1.0 + std::exp(-sum / static_cast<double>(oh * ow)));
    }
    for (int64_t m = 0; m < kM; ++m)
      for (int64_t p = 0; p < oh * ow; ++p) {
        double acc = weight(m, 4) + weight(m, 5);
        for (int64_t c = 0; c < kC; ++c) {
          acc += b[static_cast<size_t>(c * oh * ow + p)] * scale[static_cast<size_t>(c)] *
                 weight(m * kC + c, 3);
        }
        out.push_back(acc);
      }
  }
  return out;
}

TEST(BlockChannels, MovesADepthwiseSeparableBlockIntoBlockedChannels) {
  BlockChannelsStats stats;
  PassResult r = block_channels(infer_types_with_facts(parse_module(block(true))), &stats);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(stats.convs, 2u);
  EXPECT_EQ(stats.others, 5u);  // HardSwish, the pool, Sigmoid, Mul, Add
  EXPECT_EQ(stats.to_blocked, 1u);
  std::map<std::string, int> counts = call_counts(dce(r).module);
  EXPECT_EQ(counts["dynvm.ConvBlocked"], 2) << print_module(r.module);
  EXPECT_EQ(counts["dynvm.ToBlocked"], 1);
  EXPECT_EQ(counts["dynvm.FromBlocked"], 1);  // the result's only: dce drops the others
  EXPECT_EQ(counts["Conv"], 0);
}

TEST(BlockChannels, BlockedPipelineMatchesDoubleLoops) {
  vm::Executable exe = compile(parse_module(block(true)), CompileOptions{});
  vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
  for (const auto& [n, h, w] : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {1, 2, 5}, {2, 7, 7}, {1, 13, 30}, {3, 16, 9}}) {
    vm::Tensor x = vm::Tensor::empty({n, kC, h, w}, vm::DType::kFloat32);
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data_as<float>()[i] = static_cast<float>((i * 13 % 29) - 14) / 9.0f;
    }
    std::vector<vm::Value> in{x};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    const int64_t oh = (h - 1) / 2 + 1, ow = (w - 1) / 2 + 1;
    ASSERT_EQ(y.shape(), (vm::Shape{n, kM, oh, ow}));
    const std::vector<double> want = reference(x, n, h, w);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(y.data_as<float>()[i], want[i], 1e-4 * (1 + std::abs(want[i])))
          << n << "x" << h << "x" << w << " element " << i;
    }
  }
}

TEST(BlockChannels, LeavesAModelWhoseDenseConvsWouldPadMostLanesInNchw) {
  // 20 channels compute 32 lanes; the pointwise conv alone is no reason to block.
  PassResult r = block_channels(infer_types_with_facts(parse_module(block(false))));
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(call_counts(r.module)["Conv"], 2);
}

TEST(BlockChannels, BlocksGroupsOfWholeBlocksOnly) {
  // 2 groups of 16 channels follow the stem into the layout; 4 groups of 8 do not.
  auto model = [](int64_t groups) {
    return "dim n: 1..8\ndim h: 1..64\ndim w: 1..64\nfn @main(%x: f32[n, 3, h, w]) {\n"
           "  %a = Conv(%x, " +
           constant({32, 3, 3, 3}, 1) +
           ") {pads=[1, 1, 1, 1]}\n"
           "  %b = Relu(%a)\n"
           "  %c = Conv(%b, " +
           constant({32, 32 / groups, 3, 3}, 2) + ") {group=" + std::to_string(groups) +
           ", pads=[1, 1, 1, 1]}\n"
           "  %d = Relu(%c)\n"
           "  %p = MaxPool(%d) {kernel_shape=[2, 2], strides=[2, 2]}\n"
           "  return %p\n}\n";
  };
  BlockChannelsStats whole;
  PassResult r = block_channels(infer_types_with_facts(parse_module(model(2))), &whole);
  EXPECT_EQ(whole.convs, 2u) << print_module(r.module);
  EXPECT_EQ(call_counts(dce(r).module)["Conv"], 0);
  BlockChannelsStats split;
  r = block_channels(infer_types_with_facts(parse_module(model(4))), &split);
  EXPECT_EQ(split.convs, 0u) << print_module(r.module);  // the stem alone gains nothing
  EXPECT_EQ(call_counts(dce(r).module)["Conv"], 2);
  // Groups of 16 channels run directly, one group of 32 by Winograd.
  EXPECT_EQ(whole.winograd, 0u);
  BlockChannelsStats one;
  block_channels(infer_types_with_facts(parse_module(model(1))), &one);
  EXPECT_EQ(one.convs, 2u);
  EXPECT_EQ(one.winograd, 1u);
}

// A 16-channel 3x3 conv over an NCHW value that is not a stem's few channels, then a
// pointwise conv (no depthwise convs in the module).
std::string dense_then_pointwise(int64_t stride) {
  return "dim n: 1..8\ndim h: 1..64\ndim w: 1..64\n"
         "fn @main(%x: f32[n, 16, h, w]) {\n"
         "  %a = Conv(%x, " +
         constant({16, 16, 3, 3}, 1) + ") {pads=[1, 1, 1, 1], strides=[" + std::to_string(stride) +
         ", " + std::to_string(stride) +
         "]}\n"
         "  %b = Relu(%a)\n"
         "  %c = Conv(%b, " +
         constant({32, 16, 1, 1}, 2) +
         ")\n"
         "  return %c\n}\n";
}

TEST(BlockChannels, LeavesDenseConvsOutsideAChainInNchw) {
  // Strided (no Winograd) over 16 channels, converting the conv or the pointwise one would
  // cost what it gains.
  PassResult r = block_channels(infer_types_with_facts(parse_module(dense_then_pointwise(2))));
  EXPECT_FALSE(r.changed) << print_module(r.module);
  EXPECT_EQ(call_counts(r.module)["Conv"], 2);
  // Stride 1 without Winograd likewise.
  r = block_channels(infer_types_with_facts(parse_module(dense_then_pointwise(1))), nullptr, false);
  EXPECT_FALSE(r.changed) << print_module(r.module);
}

TEST(BlockChannels, StartsAChainAtAStridedConvOverManyChannels) {
  // 32 channels, stride 2: NCHW vectorizes along the strided output row, and the conv runs
  // blocked, converted in and out, in 0.6-0.9 of its time. At 16 channels it stays (above).
  const std::string m =
      "dim n: 1..8\ndim h: 1..64\ndim w: 1..64\n"
      "fn @main(%x: f32[n, 32, h, w]) {\n"
      "  %a = Conv(%x, " +
      constant({32, 32, 5, 5}, 1) +
      ") {pads=[2, 2, 2, 2], strides=[2, 2]}\n"
      "  %y = Relu(%a)\n"
      "  return %y\n}\n";
  BlockChannelsStats stats;
  PassResult r = block_channels(infer_types_with_facts(parse_module(m)), &stats);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(stats.convs, 1u);
  EXPECT_EQ(stats.winograd, 0u);
  EXPECT_EQ(stats.to_blocked, 1u);
  EXPECT_EQ(call_counts(dce(r).module)["dynvm.ConvBlocked"], 1) << print_module(r.module);
}

TEST(BlockChannels, StartsAChainAtAWinogradConv) {
  // By Winograd the conv runs 2-3x faster blocked: its input is converted, and its result
  // converted back for the pointwise conv, which stays NCHW.
  BlockChannelsStats stats;
  PassResult r =
      block_channels(infer_types_with_facts(parse_module(dense_then_pointwise(1))), &stats);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(stats.convs, 1u);
  EXPECT_EQ(stats.winograd, 1u);
  EXPECT_EQ(stats.to_blocked, 1u);
  std::map<std::string, int> counts = call_counts(dce(r).module);
  EXPECT_EQ(counts["dynvm.ConvBlocked"], 1) << print_module(r.module);
  EXPECT_EQ(counts["Conv"], 1);
}

TEST(BlockChannels, AWinogradConvMayPadAQuarterOfItsLanes) {
  // 28 output channels compute 32 lanes: too many padded ones for a direct conv (1/8), not
  // for one by Winograd (1/4).
  const std::string m =
      "dim n: 1..8\ndim h: 1..64\ndim w: 1..64\n"
      "fn @main(%x: f32[n, 16, h, w]) {\n"
      "  %a = Conv(%x, " +
      constant({28, 16, 3, 3}, 1) +
      ") {pads=[1, 1, 1, 1]}\n"
      "  %y = Relu(%a)\n"
      "  return %y\n}\n";
  BlockChannelsStats stats;
  EXPECT_TRUE(block_channels(infer_types_with_facts(parse_module(m)), &stats).changed);
  EXPECT_EQ(stats.winograd, 1u);
  EXPECT_FALSE(block_channels(infer_types_with_facts(parse_module(m)), nullptr, false).changed);
}

// A ResNet-style stem and block over x [n, 3, h, w]: 7x7 stride-2 conv to 16 channels, Relu,
// MaxPool 3x3 stride 2, a 3x3 conv, Relu, a 3x3 conv, the residual Add, Relu, AveragePool 2x2
// stride 2 (without its pads counted), a 1x1 conv to 32 (left in NCHW).
constexpr int64_t kStem = 16, kOut = 32;

std::string resnet() {
  std::ostringstream os;
  os << "dim n: 1..8\ndim h: 1..128\ndim w: 1..128\nfn @main(%x: f32[n, 3, h, w]) {\n"
     << "  %a = Conv(%x, " << constant({kStem, 3, 7, 7}, 1) << ", " << constant({kStem}, 2)
     << ") {pads=[3, 3, 3, 3], strides=[2, 2]}\n"
     << "  %b = Relu(%a)\n"
     << "  %p = MaxPool(%b) {kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]}\n"
     << "  %c = Conv(%p, " << constant({kStem, kStem, 3, 3}, 3) << ", " << constant({kStem}, 4)
     << ") {pads=[1, 1, 1, 1]}\n"
     << "  %d = Relu(%c)\n"
     << "  %e = Conv(%d, " << constant({kStem, kStem, 3, 3}, 5) << ") {pads=[1, 1, 1, 1]}\n"
     << "  %f = Add(%e, %p)\n"
     << "  %g = Relu(%f)\n"
     << "  %q = AveragePool(%g) {kernel_shape=[2, 2], pads=[0, 0, 1, 1], strides=[2, 2]}\n"
     << "  %y = Conv(%q, " << constant({kOut, kStem, 1, 1}, 6) << ")\n"
     << "  return %y\n}\n";
  return os.str();
}

// NCHW double tensors [c][y][x] of one image, and the ops of resnet() over them.
using Planes = std::vector<std::vector<std::vector<double>>>;

Planes conv(const Planes& x, int64_t m, int64_t k, int64_t stride, int64_t pad, int64_t w_salt,
            int64_t b_salt) {
  const int64_t c = static_cast<int64_t>(x.size()), h = static_cast<int64_t>(x[0].size());
  const int64_t w = static_cast<int64_t>(x[0][0].size());
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  Planes y(m, std::vector<std::vector<double>>(oh, std::vector<double>(ow)));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t q = 0; q < ow; ++q) {
        double acc = b_salt < 0 ? 0.0 : weight(o, b_salt);
        for (int64_t i = 0; i < c; ++i)
          for (int64_t ky = 0; ky < k; ++ky)
            for (int64_t kx = 0; kx < k; ++kx) {
              const int64_t iy = r * stride - pad + ky, ix = q * stride - pad + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              acc += x[i][iy][ix] * weight(((o * c + i) * k + ky) * k + kx, w_salt);
            }
        y[o][r][q] = acc;
      }
  return y;
}

// Max (average: over the taps inside) of k x k windows, pads (begin, end) per dim.
Planes pool(const Planes& x, bool max, int64_t k, int64_t stride, int64_t pb, int64_t pe) {
  const int64_t h = static_cast<int64_t>(x[0].size()), w = static_cast<int64_t>(x[0][0].size());
  const int64_t oh = (h + pb + pe - k) / stride + 1, ow = (w + pb + pe - k) / stride + 1;
  Planes y(x.size(), std::vector<std::vector<double>>(oh, std::vector<double>(ow)));
  for (size_t c = 0; c < x.size(); ++c)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t q = 0; q < ow; ++q) {
        double acc = max ? -INFINITY : 0.0;
        int count = 0;
        for (int64_t ky = 0; ky < k; ++ky)
          for (int64_t kx = 0; kx < k; ++kx) {
            const int64_t iy = r * stride - pb + ky, ix = q * stride - pb + kx;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            acc = max ? std::max(acc, x[c][iy][ix]) : acc + x[c][iy][ix];
            ++count;
          }
        y[c][r][q] = max ? acc : acc / count;
      }
  return y;
}

Planes relu(Planes x) {
  for (auto& plane : x)
    for (auto& row : plane)
      for (double& v : row) v = std::max(v, 0.0);
  return x;
}

Planes resnet_reference(const vm::Tensor& x, int64_t image, int64_t h, int64_t w) {
  Planes in(3, std::vector<std::vector<double>>(h, std::vector<double>(w)));
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t q = 0; q < w; ++q)
        in[c][y][q] = x.data_as<float>()[((image * 3 + c) * h + y) * w + q];
  Planes p = pool(relu(conv(in, kStem, 7, 2, 3, 1, 2)), true, 3, 2, 1, 1);
  Planes e = conv(relu(conv(p, kStem, 3, 1, 1, 3, 4)), kStem, 3, 1, 1, 5, -1);
  for (size_t c = 0; c < e.size(); ++c)
    for (size_t y = 0; y < e[c].size(); ++y)
      for (size_t q = 0; q < e[c][y].size(); ++q) e[c][y][q] += p[c][y][q];
  return conv(pool(relu(e), false, 2, 2, 0, 1), kOut, 1, 1, 0, 6, -1);
}

TEST(BlockChannels, MovesAResNetStemAndBlockWithoutConvertingItsInput) {
  BlockChannelsStats stats;
  PassResult r = block_channels(infer_types_with_facts(parse_module(resnet())), &stats);
  EXPECT_TRUE(r.changed);
  // The last 1x1 conv stays NCHW: its result is the function's, nothing gains after it.
  EXPECT_EQ(stats.convs, 3u);
  EXPECT_EQ(stats.to_blocked, 0u);  // the stem reads the NCHW input itself
  EXPECT_EQ(stats.winograd, 2u);    // the block's 3x3 stride-1 convs over whole blocks
  BlockChannelsStats direct;
  block_channels(infer_types_with_facts(parse_module(resnet())), &direct, false);
  EXPECT_EQ(direct.convs, 3u);
  EXPECT_EQ(direct.winograd, 0u);
  std::map<std::string, int> counts = call_counts(dce(r).module);
  EXPECT_EQ(counts["dynvm.ConvBlocked"], 3) << print_module(r.module);
  EXPECT_EQ(counts["dynvm.MaxPoolBlocked"], 1);
  EXPECT_EQ(counts["dynvm.AveragePoolBlocked"], 1);
  EXPECT_EQ(counts["dynvm.FromBlocked"], 1);
  EXPECT_EQ(counts["Conv"], 1);
  EXPECT_EQ(counts["MaxPool"] + counts["AveragePool"], 0);
}

void check_resnet(vm::Executable exe) {
  vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
  for (const auto& [n, h, w] :
       std::vector<std::array<int64_t, 3>>{{1, 8, 8}, {1, 9, 30}, {2, 17, 23}, {1, 40, 13}}) {
    vm::Tensor x = vm::Tensor::empty({n, 3, h, w}, vm::DType::kFloat32);
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data_as<float>()[i] = static_cast<float>((i * 13 % 29) - 14) / 9.0f;
    }
    std::vector<vm::Value> in{x};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    size_t at = 0;
    for (int64_t image = 0; image < n; ++image) {
      const Planes want = resnet_reference(x, image, h, w);
      if (image == 0) {
        ASSERT_EQ(y.shape(), (vm::Shape{n, kOut, static_cast<int64_t>(want[0].size()),
                                        static_cast<int64_t>(want[0][0].size())}));
      }
      for (const auto& plane : want)
        for (const auto& row : plane)
          for (double v : row) {
            ASSERT_NEAR(y.data_as<float>()[at], v, 1e-4 * (1 + std::abs(v)))
                << n << "x" << h << "x" << w << " element " << at;
            ++at;
          }
    }
  }
}

// Its 3x3 stride-1 convs by Winograd's F(4x4, 3x3), the default (the direct blocked kernel
// is checked in tests/kernels/ops/conv_blocked_test.cc). The templates' default schedules:
// ranking lowers every candidate, slow under the sanitizers, and the values are the same.
TEST(BlockChannels, BlockedResNetMatchesDoubleLoops) {
  CompileOptions options;
  options.lower.rank_schedules = false;
  check_resnet(compile(parse_module(resnet()), options));
}

}  // namespace
}  // namespace dynvm::compiler
