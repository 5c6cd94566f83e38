// fuse_ops: which calls become one primitive function, and the fused kernel's values. The
// references are plain double loops written here (matmul + bias + hard-swish, relu,
// sigmoid), not dynvm's unfused kernels.
#include "compiler/passes/fuse_ops.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/pipeline.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

// A linear layer and ONNX's spelled-out hard-swish: x * clip(x + 3, 0, 6) / 6, where x is
// read twice (a DAG, not a chain).
constexpr const char* kHardSwishLinear = R"(dim n: 1..64
fn @main(%x: f32[n, 8], %w: f32[8, 16], %b: f32[16]) {
  %m = MatMul(%x, %w)
  %a = Add(%m, %b)
  %t = Add(%a, const(f32[], [3]))
  %c = Clip(%t, const(f32[], [0]), const(f32[], [6]))
  %h = Mul(%a, %c)
  %y = Div(%h, const(f32[], [6]))
  return %y
}
)";

// %r is a result too, so it must be stored: the group stops at it.
constexpr const char* kEscaping = R"(dim n: 1..64
fn @main(%x: f32[n, 8], %w: f32[8, 16]) {
  %m = MatMul(%x, %w)
  %r = Relu(%m)
  %s = Sigmoid(%r)
  return (%r, %s)
}
)";

TypedModule fused(const char* text) { return fuse_ops(infer_types_with_facts(parse_module(text))); }

std::vector<const Function*> primitives(const Module& m) {
  std::vector<const Function*> out;
  for (const auto& f : m.functions) {
    if (f->primitive) out.push_back(f.get());
  }
  return out;
}

size_t count_lets(const Expr& body) {
  size_t n = 0;
  for (Expr e = body; e.kind() == ExprKind::kLet; e = e->operands[2]) ++n;
  return n;
}

vm::Tensor seeded(std::vector<int64_t> shape, float scale, int seed) {
  vm::Tensor t = vm::Tensor::empty(shape, vm::DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data_as<float>()[i] = scale * static_cast<float>(((i * 37 + seed * 11) % 23) - 11) / 11.0f;
  }
  return t;
}

// x @ w (+ b) as doubles.
std::vector<double> linear(const vm::Tensor& x, const vm::Tensor& w, const vm::Tensor* b) {
  const int64_t n = x.shape()[0], k = x.shape()[1], m = w.shape()[1];
  std::vector<double> y(static_cast<size_t>(n * m));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      double s = b != nullptr ? b->data_as<float>()[j] : 0.0;
      for (int64_t r = 0; r < k; ++r) {
        s += double{x.data_as<float>()[i * k + r]} * w.data_as<float>()[r * m + j];
      }
      y[static_cast<size_t>(i * m + j)] = s;
    }
  }
  return y;
}

TEST(FuseOps, LinearAndSpelledOutHardSwishBecomeOneKernel) {
  TypedModule t = fused(kHardSwishLinear);
  auto groups = primitives(t.module);
  ASSERT_EQ(groups.size(), 1u) << print_module(t.module);
  EXPECT_EQ(count_lets(groups[0]->body), 6u) << print_module(t.module);
  // main is one call of the group.
  EXPECT_EQ(count_lets(t.module.find_function("main")->body), 1u) << print_module(t.module);
  // The text form keeps the mark: `fn @fused0_MatMul_x6(...) -> f32[n, 16] primitive {`.
  const std::string text = print_module(t.module);
  EXPECT_NE(text.find("f32[n, 16] primitive {"), std::string::npos) << text;
  EXPECT_EQ(primitives(parse_module(text)).size(), 1u);

  vm::Executable exe = lower_module(t);
  EXPECT_EQ(exe.kernels.size(), 1u);
  vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
  vm::Tensor w = seeded({8, 16}, 2.0f, 1), b = seeded({16}, 1.0f, 2);
  for (int64_t n : {1, 5, 37}) {
    vm::Tensor x = seeded({n, 8}, 1.5f, 3 + static_cast<int>(n));
    std::vector<vm::Value> in{x, w, b};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{n, 16}));
    std::vector<double> a = linear(x, w, &b);
    for (size_t i = 0; i < a.size(); ++i) {
      double want = a[i] * std::min(std::max(a[i] + 3.0, 0.0), 6.0) / 6.0;
      EXPECT_NEAR(y.data_as<float>()[i], want, 1e-4 * (1 + std::abs(want))) << "n " << n;
    }
  }
}

TEST(FuseOps, AValueUsedOutsideTheGroupEndsIt) {
  TypedModule t = fused(kEscaping);
  auto groups = primitives(t.module);
  ASSERT_EQ(groups.size(), 1u) << print_module(t.module);
  EXPECT_EQ(count_lets(groups[0]->body), 2u);  // MatMul, Relu; Sigmoid reads the stored %r
  const std::string text = print_module(t.module);
  EXPECT_NE(text.find("= Sigmoid("), text.find("fn @main")) << text;

  vm::VirtualMachine machine(vm::Program::load(lower_module(t)));
  vm::Tensor x = seeded({3, 8}, 1.0f, 4), w = seeded({8, 16}, 1.0f, 5);
  std::vector<vm::Value> in{x, w};
  std::vector<vm::Value> out = machine.run(in);
  ASSERT_EQ(out.size(), 2u);
  std::vector<double> m = linear(x, w, nullptr);
  for (size_t i = 0; i < m.size(); ++i) {
    double r = std::max(m[i], 0.0);
    EXPECT_NEAR(out[0].as_tensor().data_as<float>()[i], r, 1e-5);
    EXPECT_NEAR(out[1].as_tensor().data_as<float>()[i], 1 / (1 + std::exp(-r)), 1e-5);
  }
}

TEST(FuseOps, AFollowerOfAnotherShapeIsNotFused) {
  // %r is [n, 1]; the Add broadcasts it to [n, 8]: a different loop nest, so it is not an
  // epilogue of the Relu (it may anchor its own group).
  TypedModule t = fused(R"(dim n: 1..64
fn @main(%v: f32[n, 1], %x: f32[n, 8]) {
  %r = Relu(%v)
  %y = Add(%r, %x)
  return %y
}
)");
  EXPECT_TRUE(primitives(t.module).empty()) << print_module(t.module);
}

// Attention scores plus a mask that is its own group (Where): the Add joins the matmul's
// group and reads the mask as an input; the mask's group ends at the value it reads.
TEST(FuseOps, AFollowerOfTwoGroupsJoinsTheOneThatComputesMore) {
  TypedModule t = fused(R"(dim n: 1..64
fn @main(%q: f32[n, 8], %k: f32[8, n], %keep: bool[1, n]) {
  %mask = Where(%keep, const(f32[], [0]), const(f32[], [-1000]))
  %s = MatMul(%q, %k)
  %y = Add(%s, %mask)
  return %y
}
)");
  auto groups = primitives(t.module);
  ASSERT_EQ(groups.size(), 1u) << print_module(t.module);
  EXPECT_EQ(count_lets(groups[0]->body), 2u) << print_module(t.module);  // MatMul, Add
  const std::string text = print_module(t.module);
  EXPECT_NE(text.find("fused0_MatMul_x2"), std::string::npos) << text;

  vm::VirtualMachine machine(vm::Program::load(lower_module(t)));
  for (int64_t n : {1, 7, 33}) {
    vm::Tensor q = seeded({n, 8}, 1.0f, 6), k = seeded({8, n}, 1.0f, 7);
    vm::Tensor keep = vm::Tensor::empty({1, n}, vm::DType::kBool);
    for (int64_t j = 0; j < n; ++j) keep.data_as<bool>()[j] = j % 3 != 0;
    std::vector<vm::Value> in{q, k, keep};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{n, n}));
    std::vector<double> s = linear(q, k, nullptr);
    for (int64_t i = 0; i < n * n; ++i) {
      const double want = s[static_cast<size_t>(i)] + (i % n % 3 != 0 ? 0.0 : -1000.0);
      EXPECT_NEAR(y.data_as<float>()[i], want, 1e-4 * (1 + std::abs(want))) << "n " << n;
    }
  }
}

TEST(FuseOps, ShapeValuesAndViewsStayOutside) {
  // Shape arithmetic is computed on the host and Reshape is a view: neither is a kernel.
  TypedModule t = fused(R"(dim n: 1..64
fn @main(%x: f32[n, 8]) {
  %s = Shape(%x)
  %f = Reshape(%x, const(i64[1], [-1]))
  %r = Relu(%f)
  return (%s, %r)
}
)");
  EXPECT_TRUE(primitives(t.module).empty()) << print_module(t.module);
}

// A strided conv's output length (l - 3) floordiv 2 + 1 is a new dim, negative for l < 1:
// the conv carries a run-time check. Its epilogue fuses all the same (before, a checked
// binding stayed out of groups, and the Relu and Mul after it, whose dims are the conv's and
// need no check, each ran as a kernel), and the check is asserted before the fused call.
TEST(FuseOps, AConvWithARunTimeCheckTakesItsEpilogue) {
  TypedModule t = fused(R"(dim n: 1..8
dim l: 0..4096
fn @main(%x: f32[n, 4, l], %w: f32[8, 4, 3]) {
  %c = Conv(%x, %w) {strides=[2]}
  %r = Relu(%c)
  %y = Mul(%r, const(f32[], [0.5]))
  return %y
}
)");
  auto groups = primitives(t.module);
  ASSERT_EQ(groups.size(), 1u) << print_module(t.module);
  EXPECT_EQ(count_lets(groups[0]->body), 3u) << print_module(t.module);
  ASSERT_EQ(t.checks.size(), 1u);  // the conv's, now on the fused call

  vm::VirtualMachine machine(vm::Program::load(lower_module(t)));
  vm::Tensor w = seeded({8, 4, 3}, 1.0f, 6);
  for (int64_t l : {3, 4, 17}) {
    vm::Tensor x = seeded({2, 4, l}, 1.0f, 7 + static_cast<int>(l));
    std::vector<vm::Value> in{x, w};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    const int64_t out_len = (l - 3) / 2 + 1;
    ASSERT_EQ(y.shape(), (vm::Shape{2, 8, out_len}));
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t o = 0; o < 8; ++o) {
        for (int64_t p = 0; p < out_len; ++p) {
          double s = 0;
          for (int64_t c = 0; c < 4; ++c) {
            for (int64_t k = 0; k < 3; ++k) {
              s += double{x.data_as<float>()[(b * 4 + c) * l + 2 * p + k]} *
                   w.data_as<float>()[(o * 4 + c) * 3 + k];
            }
          }
          EXPECT_NEAR(y.data_as<float>()[(b * 8 + o) * out_len + p], 0.5 * std::max(s, 0.0), 1e-5)
              << "l " << l;
        }
      }
    }
  }
  vm::Tensor short_x = seeded({1, 4, 0}, 1.0f, 8);
  std::vector<vm::Value> in{short_x, w};
  try {
    machine.run(in);
    ADD_FAILURE() << "a length-0 input ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("negative dim"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dynvm::compiler
