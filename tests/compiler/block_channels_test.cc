// block_channels: a depthwise-separable block with squeeze-and-excitation (depthwise 3x3
// stride 2, HardSwish, GlobalAveragePool, Sigmoid, Mul, pointwise conv, a per-channel Add)
// moves into the blocked layout with one conversion in and one out; the whole pipeline's
// values against double loops at sizes from 1x1 up (odd widths, a batch); a model without a
// depthwise conv is left alone.
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

TEST(BlockChannels, LeavesAModelWithoutDepthwiseConvsInNchw) {
  PassResult r = block_channels(infer_types_with_facts(parse_module(block(false))));
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(call_counts(r.module)["Conv"], 2);
}

}  // namespace
}  // namespace dynvm::compiler
