// fold_batch_norm's second form: an inference BatchNormalization that no Conv feeds becomes
// a multiply and an add by constants, which fuse into the kernel producing its input; values
// against the ONNX definition computed in double, at ranks 2 to 4.
#include "compiler/passes/fold_batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/fuse_ops.h"
#include "compiler/pipeline.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

constexpr int64_t kChannels = 5;
constexpr double kEps = 1e-3;

// The four statistics, channel o: scale, B, mean, var (var > 0).
double stat(int which, int64_t o) {
  switch (which) {
    case 0:
      return 0.5 + 0.25 * static_cast<double>(o);
    case 1:
      return static_cast<double>(o) - 2.0;
    case 2:
      return 0.125 * static_cast<double>(o * o) - 0.5;
    default:
      return 0.75 + static_cast<double>(o);
  }
}

std::string constant_stat(int which) {
  std::ostringstream os;
  os << "const(f32[" << kChannels << "], [";
  for (int64_t o = 0; o < kChannels; ++o) os << (o > 0 ? ", " : "") << stat(which, o);
  os << "])";
  return os.str();
}

// `dim n: 1..8`, x [n, C, trailing...] -> Relu -> BatchNormalization with constant statistics.
std::string relu_batch_norm(const std::string& trailing) {
  std::ostringstream os;
  os << "dim n: 1..8\nfn @main(%x: f32[n, " << kChannels << trailing
     << "]) {\n  %r = Relu(%x)\n  %y = BatchNormalization(%r, " << constant_stat(0) << ", "
     << constant_stat(1) << ", " << constant_stat(2) << ", " << constant_stat(3)
     << ") {epsilon = " << std::to_string(kEps) << "}\n  return %y\n}\n";
  return os.str();
}

// The names of the calls in main's body, in order.
std::vector<std::string> call_names(const Module& m) {
  std::vector<std::string> names;
  for (Expr e = m.find_function("main")->body; e.kind() == ExprKind::kLet; e = e->operands[2]) {
    if (e->operands[1].kind() == ExprKind::kCall) names.push_back(e->operands[1]->name);
  }
  return names;
}

TEST(FoldBatchNorm, ANormalizationOfNoConvIsAMultiplyAndAnAddFusedIntoItsProducer) {
  struct Case {
    std::string trailing;  // x's dims after C
    vm::Shape shape;       // x's shape at n = 3
  };
  for (const Case& c : {Case{"", {3, kChannels}}, Case{", 7", {3, kChannels, 7}},
                        Case{", 4, 6", {3, kChannels, 4, 6}}}) {
    SCOPED_TRACE(c.trailing);
    FoldBatchNormStats stats;
    PassResult r =
        fold_batch_norm(infer_types_with_facts(parse_module(relu_batch_norm(c.trailing))), &stats);
    EXPECT_EQ(stats.folded, 0u);
    EXPECT_EQ(stats.affine, 1u);
    EXPECT_EQ(call_names(r.module), (std::vector<std::string>{"Relu", "Mul", "Add"}))
        << print_module(r.module);
    TypedModule t = fuse_ops(r);
    vm::Executable exe = lower_module(t);
    ASSERT_EQ(exe.kernels.size(), 1u) << print_module(t.module);
    vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
    vm::Tensor x = vm::Tensor::empty(c.shape, vm::DType::kFloat32);
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data_as<float>()[i] = static_cast<float>((i * 7 % 23) - 9) / 4.0f;
    }
    std::vector<vm::Value> in{x};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), c.shape);
    const int64_t inner = x.numel() / (3 * kChannels);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t o = i / inner % kChannels;
      const double v = std::max(double{x.data_as<float>()[i]}, 0.0);
      const double want = (v - stat(2, o)) / std::sqrt(stat(3, o) + kEps) * stat(0, o) + stat(1, o);
      EXPECT_NEAR(y.data_as<float>()[i], want, 1e-5 * (1 + std::abs(want))) << i;
    }
  }
}

// Statistics that are inputs, not constants, leave the BatchNormalization as it is.
TEST(FoldBatchNorm, StatisticsThatAreNotConstantsStay) {
  const std::string text =
      "fn @main(%x: f32[2, 3, 4], %s: f32[3]) {\n  %r = Relu(%x)\n"
      "  %y = BatchNormalization(%r, %s, %s, %s, %s)\n  return %y\n}\n";
  FoldBatchNormStats stats;
  PassResult r = fold_batch_norm(infer_types_with_facts(parse_module(text)), &stats);
  EXPECT_EQ(stats.folded + stats.affine, 0u);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(call_names(r.module), (std::vector<std::string>{"Relu", "BatchNormalization"}));
}

}  // namespace
}  // namespace dynvm::compiler
