// The TIR pipeline (kernels/tir/lower.h) feeding code generation: multi-dimensional
// buffers, a parallel outer loop and a vectorized inner loop of symbolic extent, lowered by
// the real passes (vectorize splits and masks the remainder, flatten_storage flattens,
// outline_parallel outlines) and compiled here. The core codegen tests do not depend on the passes;
// this one checks that the two halves agree on the form of lowered TIR.
#include "kernels/tir/lower.h"
#include "kernels/tir/printer.h"
#include "tests/kernels/codegen/codegen_test_util.h"
#include "vm/executor.h"

namespace dynvm::codegen::testing {
namespace {

using tir::Expr;
using vm::DType;
using vm::Tensor;

// C[i, j] = exp(A[i, j] * 0.5) + B[j]: i parallel over m, j vectorized over n.
tir::PrimFunc bias_exp_func() {
  Var m("m"), n("n"), i("i"), j("j");
  BufferRef A = buffer("A", DType::kFloat32, {m, n});
  BufferRef B = buffer("B", DType::kFloat32, {n});
  BufferRef C = buffer("C", DType::kFloat32, {m, n});
  Expr v = tir::call(tir::Intrinsic::kExp,
                     tir::buffer_load(A, {i, j}) * tir::make_const(tir::f32(), 0.5)) +
           tir::buffer_load(B, {j});
  tir::Stmt inner = tir::make_for(j, 0, n, ForKind::kVectorized, tir::make_store(C, {i, j}, v));
  tir::PrimFunc f;
  f.name = "bias_exp";
  f.params = {A, B, C};
  f.num_inputs = 2;
  f.body = tir::make_for(i, 0, m, ForKind::kParallel, inner);
  return f;
}

TEST(LowerIntegrationTest, ParallelVectorizedKernelFromThePipeline) {
  tir::LoweredFunc lowered = tir::lower(bias_exp_func());
  ASSERT_EQ(lowered.regions.size(), 1u);
  std::vector<tir::LoweredFunc> funcs = {lowered};
  vm::Executable exe = executable_for(build(funcs), funcs);
  exe.entry = 1;
  auto sym = [](const char* s) { return vm::DimSpec{s, 0, 0}; };
  exe.inputs = {vm::TensorSpec{"A", DType::kFloat32, {sym("m"), sym("n")}},
                vm::TensorSpec{"B", DType::kFloat32, {sym("n")}},
                vm::TensorSpec{"C", DType::kFloat32, {sym("m"), sym("n")}}};
  exe.outputs = {exe.inputs[2]};
  vm::TbbExecutor executor(vm::Program::load(exe), 2);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {3, 17}, {64, 100}, {7, 1000}}) {
    std::vector<float> a(static_cast<size_t>(m * n)), b(static_cast<size_t>(n));
    for (size_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(k % 23) * 0.37f - 4;
    for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<float>(k) * 0.01f;
    std::vector<vm::Value> inputs{tensor(a, DType::kFloat32, {m, n}), tensor(b, DType::kFloat32),
                                  poisoned({m, n}, DType::kFloat32)};
    std::vector<float> got = values<float>(executor.run(inputs)[0].as_tensor());
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double want = std::exp(double{a[r * n + c]} * 0.5) + b[c];
        ASSERT_NEAR(got[r * n + c], want, 1e-6 * std::abs(want))
            << "m = " << m << " n = " << n << " at " << r << ", " << c;
      }
    }
  }
}

// C[i, j] = T[j] + 1 with T[j] = A[j, i] * 2 staged in a 16-element local tile per block of
// 16 columns, over a symbolic [m, n]: the last block's masked accesses are a gather with a
// symbolic stride (A), a store into and a load from a stack slot (T), and a contiguous store.
tir::PrimFunc tiled_transpose_func() {
  Var m("m"), n("n"), i("i"), jo("jo"), ji("ji"), jj("jj");
  BufferRef A = buffer("A", DType::kFloat32, {n, m});
  BufferRef C = buffer("C", DType::kFloat32, {m, n});
  BufferRef T = buffer("T", DType::kFloat32, {16}, tir::BufferScope::kLocal);
  auto in_range = [&](const Var& j) { return arith::lt(jo * 16 + j, n); };
  tir::Stmt fill = tir::make_for(
      ji, 0, 16, ForKind::kVectorized,
      tir::make_if(in_range(ji), tir::make_store(T, {ji},
                                                 tir::buffer_load(A, {jo * 16 + ji, i}) *
                                                     tir::make_const(tir::f32(), 2.0))));
  tir::Stmt drain = tir::make_for(
      jj, 0, 16, ForKind::kVectorized,
      tir::make_if(in_range(jj),
                   tir::make_store(C, {i, jo * 16 + jj},
                                   tir::buffer_load(T, {jj}) + tir::make_const(tir::f32(), 1.0))));
  tir::PrimFunc f;
  f.name = "tiled_transpose";
  f.params = {A, C};
  f.num_inputs = 1;
  f.body = tir::make_for(i, 0, m, ForKind::kSerial,
                         tir::make_for(jo, 0, arith::floordiv(n + 15, 16), ForKind::kSerial,
                                       tir::make_allocate(T, tir::make_seq({fill, drain}))));
  return f;
}

TEST(LowerIntegrationTest, MaskedRemainderGathersAndKeepsItsTileInAStackSlot) {
  tir::LoweredFunc lowered = tir::lower(tiled_transpose_func());
  EXPECT_NE(tir::to_string(lowered).find("active"), std::string::npos) << tir::to_string(lowered);
  std::vector<tir::LoweredFunc> funcs = {lowered};
  vm::Executable exe = executable_for(build(funcs), funcs);
  exe.entry = 1;
  auto sym = [](const char* s) { return vm::DimSpec{s, 0, 0}; };
  exe.inputs = {vm::TensorSpec{"A", DType::kFloat32, {sym("n"), sym("m")}},
                vm::TensorSpec{"C", DType::kFloat32, {sym("m"), sym("n")}}};
  exe.outputs = {exe.inputs[1]};
  vm::TbbExecutor executor(vm::Program::load(exe), 1);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {2, 5}, {3, 16}, {5, 17}, {4, 47}}) {
    std::vector<float> a(static_cast<size_t>(m * n));
    for (size_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(k % 29) * 0.5f - 3;
    std::vector<vm::Value> inputs{tensor(a, DType::kFloat32, {n, m}),
                                  poisoned({m, n}, DType::kFloat32)};
    std::vector<float> got = values<float>(executor.run(inputs)[0].as_tensor());
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        ASSERT_EQ(got[r * n + c], a[c * m + r] * 2 + 1)
            << "m = " << m << " n = " << n << " at " << r << ", " << c;
      }
    }
  }
}

// D[i, 0] = A[i, 1] + A[i, 0] * 10 over a symbolic n, i vectorized: the loads and the
// store have stride 2, so each is one contiguous masked access of 32 elements (the
// remainder's masked by its active lanes too), and D[i, 1] must stay as it was.
tir::PrimFunc pairs_func() {
  Var n("n"), i("i");
  BufferRef A = buffer("A", DType::kFloat32, {n, 2});
  BufferRef D = buffer("D", DType::kFloat32, {n, 2});
  tir::Stmt body =
      tir::make_store(D, {i, 0},
                      tir::buffer_load(A, {i, 1}) +
                          tir::buffer_load(A, {i, 0}) * tir::make_const(tir::f32(), 10.0));
  tir::PrimFunc f;
  f.name = "pairs";
  f.params = {A, D};
  f.num_inputs = 1;
  f.body = tir::make_for(i, 0, n, ForKind::kVectorized, body);
  return f;
}

TEST(LowerIntegrationTest, StrideTwoAccessesWithAndWithoutMasks) {
  tir::LoweredFunc lowered = tir::lower(pairs_func());
  const std::string text = tir::to_string(lowered);
  EXPECT_NE(text.find(", 2, 16)"), std::string::npos) << text;
  EXPECT_NE(text.find(", 2, 16, active"), std::string::npos) << text;
  std::vector<tir::LoweredFunc> funcs = {lowered};
  vm::Executable exe = executable_for(build(funcs), funcs);
  exe.entry = 1;
  auto sym = [](const char* s) { return vm::DimSpec{s, 0, 0}; };
  exe.inputs = {vm::TensorSpec{"A", DType::kFloat32, {sym("n"), vm::DimSpec{"", 2}}},
                vm::TensorSpec{"D", DType::kFloat32, {sym("n"), vm::DimSpec{"", 2}}}};
  exe.outputs = {exe.inputs[1]};
  vm::TbbExecutor executor(vm::Program::load(exe), 1);
  for (int64_t n : {1, 2, 15, 16, 17, 33, 40}) {
    std::vector<float> a(static_cast<size_t>(2 * n));
    for (size_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(k) + 0.25f;
    std::vector<vm::Value> inputs{tensor(a, DType::kFloat32, {n, 2}),
                                  poisoned({n, 2}, DType::kFloat32)};
    std::vector<float> got = values<float>(executor.run(inputs)[0].as_tensor());
    for (int64_t k = 0; k < n; ++k) {
      ASSERT_EQ(got[2 * k], a[2 * k + 1] + a[2 * k] * 10) << "n = " << n << " at " << k;
      uint32_t bits = 0;
      std::memcpy(&bits, &got[2 * k + 1], sizeof bits);
      ASSERT_EQ(bits, 0xa5a5a5a5u) << "n = " << n << ": D[" << k << ", 1] was written";
    }
  }
}

}  // namespace
}  // namespace dynvm::codegen::testing
