// fuse_attention: which MatMul -> scale -> mask -> Softmax -> MatMul chains become one
// dynvm.Attention and which stay, and the fused kernel's values against double loops of the
// chain's definition.
#include "compiler/passes/fuse_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/pipeline.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

// The names of the calls in main's body, in order.
std::vector<std::string> call_names(const Module& m) {
  std::vector<std::string> names;
  for (Expr e = m.find_function("main")->body; e.kind() == ExprKind::kLet; e = e->operands[2]) {
    if (e->operands[1].kind() == ExprKind::kCall) names.push_back(e->operands[1]->name);
  }
  return names;
}

// q [n, 2, l, 4], kt [n, 2, 4, l], v [n, 2, l, 3], mask [n, 1, 1, l]; `scores` is the chain
// from %s (the product) to %z (the softmax's input).
std::string attention_module(const std::string& scores, const std::string& tail = "") {
  return "dim n: 1..4\ndim l: 1..64\nfn @main(%q: f32[n, 2, l, 4], %kt: f32[n, 2, 4, l], "
         "%v: f32[n, 2, l, 3], %mask: f32[n, 1, 1, l]) {\n  %s = MatMul(%q, %kt)\n" +
         scores + "  %p = Softmax(%z) {axis = -1}\n  %y = MatMul(%p, %v)\n" + tail +
         "  return %y\n}\n";
}

PassResult fused(const std::string& text, FuseAttentionStats* stats) {
  return fuse_attention(infer_types_with_facts(parse_module(text)), stats);
}

TEST(FuseAttention, ScaledMaskedChainBecomesOneCall) {
  FuseAttentionStats stats;
  PassResult r = fused(attention_module("  %d = Div(%s, const(f32[], [2]))\n"
                                        "  %m = Mul(const(f32[], [0.5]), %d)\n"
                                        "  %z = Add(%mask, %m)\n"),
                       &stats);
  EXPECT_EQ(stats.fused, 1u);
  ASSERT_EQ(call_names(r.module), (std::vector<std::string>{"dynvm.Attention"}))
      << print_module(r.module);
  Expr call = r.module.find_function("main")->body->operands[1];
  EXPECT_EQ(call->operands.size(), 4u);
  EXPECT_DOUBLE_EQ(attr_float(call->attrs, "scale", 0, "test"), 0.25);

  // Before opset 13 (the importer's coerce_to_2d), over the last axis: nothing to flatten.
  std::string legacy = attention_module("  %z = Div(%s, const(f32[], [2]))\n");
  legacy.replace(legacy.find("axis = -1"), 9, "axis = 3, coerce_to_2d = 1");
  FuseAttentionStats legacy_stats;
  fused(legacy, &legacy_stats);
  EXPECT_EQ(legacy_stats.fused, 1u);
}

TEST(FuseAttention, ChainsThatAreNotPlainAttentionStay) {
  struct Case {
    const char* what;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"the mask scaled with the scores",
       attention_module("  %m = Add(%s, %mask)\n  %z = Div(%m, const(f32[], [2]))\n")},
      {"a scale that is not a scalar", attention_module("  %z = Mul(%s, const(f32[2], [1, 2]))\n")},
      {"a scale that is not a constant", attention_module("  %z = Mul(%s, %s)\n")},
      {"the probabilities read twice",
       attention_module("  %z = Div(%s, const(f32[], [2]))\n", "  %y2 = MatMul(%p, %v)\n")},
      {"the scores read twice",
       attention_module("  %z = Div(%s, const(f32[], [2]))\n", "  %s2 = Relu(%s)\n")},
  };
  for (const Case& c : cases) {
    FuseAttentionStats stats;
    PassResult r = fused(c.text, &stats);
    EXPECT_EQ(stats.fused, 0u) << c.what << "\n" << print_module(r.module);
    EXPECT_FALSE(r.changed) << c.what;
  }
  // A softmax over another axis.
  std::string other = attention_module("  %z = Div(%s, const(f32[], [2]))\n");
  other.replace(other.find("axis = -1"), 9, "axis = 2");
  FuseAttentionStats stats;
  fused(other, &stats);
  EXPECT_EQ(stats.fused, 0u);
}

// The whole pipeline on the chain: one kernel, values against double loops at three sizes,
// the mask with -inf (padding) entries.
TEST(FuseAttention, FusedKernelMatchesTheChain) {
  const std::string text =
      attention_module("  %d = Div(%s, const(f32[], [2]))\n  %z = Add(%d, %mask)\n");
  vm::Executable exe = compile(parse_module(text), CompileOptions{});
  ASSERT_EQ(exe.kernels.size(), 1u);
  vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
  for (auto [n, l] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 9}, {3, 40}}) {
    auto tensor = [](vm::Shape shape, int seed) {
      vm::Tensor t = vm::Tensor::empty(shape, vm::DType::kFloat32);
      for (int64_t i = 0; i < t.numel(); ++i) {
        t.data_as<float>()[i] = static_cast<float>(((i * 7 + seed) % 23) - 11) / 6.0f;
      }
      return t;
    };
    vm::Tensor q = tensor({n, 2, l, 4}, 1), kt = tensor({n, 2, 4, l}, 2);
    vm::Tensor v = tensor({n, 2, l, 3}, 3), mask = tensor({n, 1, 1, l}, 4);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t j = 1; j < l; j += 3) {
        mask.data_as<float>()[b * l + j] = -std::numeric_limits<float>::infinity();
      }
    }
    std::vector<vm::Value> in{q, kt, v, mask};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{n, 2, l, 3}));
    auto f = [](const vm::Tensor& t, int64_t i) { return double{t.data_as<float>()[i]}; };
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t i = 0; i < l; ++i) {
          std::vector<double> z(static_cast<size_t>(l));
          double top = -INFINITY, sum = 0;
          for (int64_t j = 0; j < l; ++j) {
            double s = 0;
            for (int64_t k = 0; k < 4; ++k) {
              s += f(q, ((b * 2 + h) * l + i) * 4 + k) * f(kt, ((b * 2 + h) * 4 + k) * l + j);
            }
            z[static_cast<size_t>(j)] = s / 2 + f(mask, b * l + j);
            top = std::max(top, z[static_cast<size_t>(j)]);
          }
          for (double& e : z) sum += (e = std::exp(e - top));
          for (int64_t c = 0; c < 3; ++c) {
            double acc = 0;
            for (int64_t j = 0; j < l; ++j) {
              acc += z[static_cast<size_t>(j)] * f(v, ((b * 2 + h) * l + j) * 3 + c);
            }
            const double want = acc / sum;
            EXPECT_NEAR(f(y, ((b * 2 + h) * l + i) * 3 + c), want, 1e-5 * (1 + std::abs(want)))
                << "n " << n << " l " << l << " (" << b << ", " << h << ", " << i << ", " << c
                << ")";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace dynvm::compiler
