// pack_weights: which MatMuls and Gemms get their constant B packed, the packed layout
// (checked element by element against B), and the packed kernel's values against double
// loops, fused with the Relu (and Gemm's C) that follows it.
#include "compiler/passes/pack_weights.h"

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

float b_value(int64_t r, int64_t c) {
  return static_cast<float>(((r * 7 + c * 3) % 19) - 9) / 8.0f;
}

// `dim n: 1..64`, x [n, k] @ B [k, n_cols] (a constant, B[r, c] = b_value) -> Relu.
std::string linear_relu(int64_t k, int64_t n_cols) {
  std::ostringstream os;
  os << "dim n: 1..64\nfn @main(%x: f32[n, " << k << "]) {\n  %m = MatMul(%x, const(f32[" << k
     << ", " << n_cols << "], [";
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n_cols; ++c) os << (r + c > 0 ? ", " : "") << b_value(r, c);
  }
  os << "]))\n  %y = Relu(%m)\n  return %y\n}\n";
  return os.str();
}

// The first call in main's body and its let's value.
Expr first_call(const Module& m) {
  Expr e = m.find_function("main")->body;
  return e.kind() == ExprKind::kLet ? e->operands[1] : Expr();
}

TEST(PackWeights, PacksAConstantBIntoPanelsOfSixteenColumns) {
  PackWeightsStats stats;
  PassResult r = pack_weights(infer_types_with_facts(parse_module(linear_relu(40, 37))), &stats);
  EXPECT_EQ(stats.packed, 1u);
  EXPECT_TRUE(r.changed);
  Expr call = first_call(r.module);
  ASSERT_EQ(call.kind(), ExprKind::kCall) << print_module(r.module);
  EXPECT_EQ(call->name, "dynvm.MatMulPackedB");
  EXPECT_EQ(attr_int(call->attrs, "n", 0, "test"), 37);
  ASSERT_EQ(call->operands[1].kind(), ExprKind::kConstant);
  const vm::Tensor& bp = call->operands[1]->value;
  ASSERT_EQ(bp.shape(), (vm::Shape{3, 40, 16}));
  for (int64_t p = 0; p < 3; ++p) {
    for (int64_t k = 0; k < 40; ++k) {
      for (int64_t c = 0; c < 16; ++c) {
        const int64_t col = p * 16 + c;
        const float want = col < 37 ? b_value(k, col) : 0.0f;
        ASSERT_EQ(bp.data_as<float>()[(p * 40 + k) * 16 + c], want) << p << " " << k << " " << c;
      }
    }
  }
}

TEST(PackWeights, PackedAndFusedKernelMatchesDoubleLoops) {
  TypedModule t = fuse_ops(pack_weights(infer_types_with_facts(parse_module(linear_relu(40, 37)))));
  vm::Executable exe = lower_module(t);
  ASSERT_EQ(exe.kernels.size(), 1u) << print_module(t.module);  // MatMul and Relu: one kernel
  vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
  for (int64_t n : {1, 5, 37}) {
    vm::Tensor x = vm::Tensor::empty({n, 40}, vm::DType::kFloat32);
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data_as<float>()[i] = static_cast<float>((i * 13 % 17) - 8) / 9.0f;
    }
    std::vector<vm::Value> in{x};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{n, 37}));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < 37; ++j) {
        double s = 0;
        for (int64_t k = 0; k < 40; ++k)
          s += double{x.data_as<float>()[i * 40 + k]} * b_value(k, j);
        EXPECT_NEAR(y.data_as<float>()[i * 37 + j], std::max(s, 0.0), 1e-4 * (1 + std::abs(s)))
            << "n " << n << " (" << i << ", " << j << ")";
      }
    }
  }
}

// `dim n: 1..64`, Gemm(x [n, k], B, C) with B [n_cols, k] (transB) or [k, n_cols], alpha,
// beta and C [n_cols] constant (C[c] = c / 4 - 1), then Relu.
std::string gemm_relu(int64_t k, int64_t n_cols, bool trans_b, double alpha, double beta) {
  std::ostringstream os;
  const int64_t rows = trans_b ? n_cols : k, cols = trans_b ? k : n_cols;
  os << "dim n: 1..64\nfn @main(%x: f32[n, " << k << "]) {\n  %m = Gemm(%x, const(f32[" << rows
     << ", " << cols << "], [";
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) os << (r + c > 0 ? ", " : "") << b_value(r, c);
  }
  os << "]), const(f32[" << n_cols << "], [";
  for (int64_t c = 0; c < n_cols; ++c) os << (c > 0 ? ", " : "") << c / 4.0 - 1.0;
  os << "])) {transB = " << (trans_b ? 1 : 0) << ", alpha = " << std::to_string(alpha)
     << ", beta = " << std::to_string(beta) << "}\n  %y = Relu(%m)\n  return %y\n}\n";
  return os.str();
}

// Gemm's constant B packs like MatMul's (alpha and the transpose folded into the panels), C
// becomes an Add of beta * C, and the three fuse into one kernel; values against double
// loops of the Gemm's definition.
TEST(PackWeights, GemmWithAConstantBPacksAndAddsC) {
  for (bool trans_b : {true, false}) {
    const std::string text = gemm_relu(24, 20, trans_b, 0.5, 2.0);
    PackWeightsStats stats;
    PassResult packed = pack_weights(infer_types_with_facts(parse_module(text)), &stats);
    EXPECT_EQ(stats.packed, 1u);
    EXPECT_EQ(first_call(packed.module)->name, "dynvm.MatMulPackedB")
        << print_module(packed.module);
    TypedModule t = fuse_ops(packed);
    vm::Executable exe = lower_module(t);
    ASSERT_EQ(exe.kernels.size(), 1u) << print_module(t.module);
    vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
    for (int64_t n : {1, 9}) {
      vm::Tensor x = vm::Tensor::empty({n, 24}, vm::DType::kFloat32);
      for (int64_t i = 0; i < x.numel(); ++i) {
        x.data_as<float>()[i] = static_cast<float>((i * 11 % 17) - 8) / 9.0f;
      }
      std::vector<vm::Value> in{x};
      const vm::Tensor y = machine.run(in).at(0).as_tensor();
      ASSERT_EQ(y.shape(), (vm::Shape{n, 20}));
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < 20; ++j) {
          double s = 0;
          for (int64_t k = 0; k < 24; ++k) {
            s += double{x.data_as<float>()[i * 24 + k]} * (trans_b ? b_value(j, k) : b_value(k, j));
          }
          const double want = std::max(0.5 * s + 2.0 * (j / 4.0 - 1.0), 0.0);
          EXPECT_NEAR(y.data_as<float>()[i * 20 + j], want, 1e-4 * (1 + std::abs(want)))
              << "transB " << trans_b << " n " << n << " (" << i << ", " << j << ")";
        }
      }
    }
  }
}

TEST(PackWeights, LeavesARunTimeBAndANarrowBAlone) {
  PackWeightsStats stats;
  PassResult r = pack_weights(infer_types_with_facts(parse_module(R"(dim n: 1..64
fn @main(%x: f32[n, 8], %w: f32[8, 32]) {
  %m = MatMul(%x, %w)
  return %m
}
)")),
                              &stats);
  EXPECT_EQ(stats.packed, 0u);
  EXPECT_FALSE(r.changed);
  PassResult narrow =
      pack_weights(infer_types_with_facts(parse_module(linear_relu(8, 15))), &stats);
  EXPECT_EQ(stats.packed, 0u);  // under one panel of columns: nothing to stream
  EXPECT_EQ(first_call(narrow.module)->name, "MatMul");
}

}  // namespace
}  // namespace dynvm::compiler
