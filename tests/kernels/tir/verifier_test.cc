// The verifier accepts well-formed functions at each stage and rejects, with a message
// naming the problem, each kind of malformed IR. Malformed nodes are assembled directly,
// since the builders refuse to make them.
#include "kernels/tir/verifier.h"

#include <gtest/gtest.h>

#include "tests/kernels/tir/tir_test_util.h"
#include "vm/error.h"

namespace dynvm::tir::test {
namespace {

Stmt raw_store(BufferRef b, std::vector<arith::Expr> indices, Expr value) {
  StmtNode n;
  n.kind = StmtKind::kStore;
  n.buffer = std::move(b);
  n.indices = std::move(indices);
  n.value = std::move(value);
  return Stmt(std::make_shared<const StmtNode>(std::move(n)));
}

void expect_rejected(const PrimFunc& f, VerifyStage stage, const std::string& message) {
  try {
    verify(f, stage);
    ADD_FAILURE() << "verify accepted:\n" << to_string(f);
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(TirVerifier, AcceptsTheTestKernels) {
  EXPECT_NO_THROW(verify(add_split(16, ForKind::kVectorized), VerifyStage::kLowered));
  EXPECT_NO_THROW(verify(transpose_tiled(), VerifyStage::kUnrolled));
  EXPECT_NO_THROW(verify(row_sum(ForKind::kParallel), VerifyStage::kLowered));
  EXPECT_NO_THROW(verify(pairwise_product(ForKind::kSerial), VerifyStage::kLowered));
}

TEST(TirVerifier, RejectsAnUnboundVariable) {
  Var n("n"), i("i"), stray("stray");
  auto A = buf("A", {n});
  PrimFunc f{"f", {A}, 0, make_for(i, 0, n, ForKind::kSerial, make_store(A, {i + stray}, f32c(1)))};
  expect_rejected(f, VerifyStage::kLowered, "unbound variable stray");
}

TEST(TirVerifier, RejectsAShapeVarThatNoDimBinds) {
  Var n("n");
  auto A = buf("A", {n + 2});
  PrimFunc f{"f", {A}, 0, make_nop()};
  expect_rejected(f, VerifyStage::kLowered, "shape var n");
  auto B = buf("B", {n * n});
  PrimFunc g{"g", {B}, 0, make_nop()};
  expect_rejected(g, VerifyStage::kLowered, "shape var n");
}

// A dim `c * n` binds n (the kernel entry takes n = dim floordiv c and checks the rest).
TEST(TirVerifier, AcceptsAVarBoundFromAScaledDim) {
  Var n("n");
  auto A = buf("A", {n * 8});
  auto B = buf("B", {n + 1});
  PrimFunc f{"f", {A, B}, 0, make_nop()};
  EXPECT_NO_THROW(verify(f, VerifyStage::kLowered));
}

TEST(TirVerifier, RejectsAWrongIndexCount) {
  Var n("n"), m("m"), i("i");
  auto A = buf("A", {n, m, 4});
  PrimFunc f{"f", {A}, 0, make_for(i, 0, n, ForKind::kSerial, raw_store(A, {i, 0}, f32c(1)))};
  expect_rejected(f, VerifyStage::kLowered, "2 indices, rank is 3");
  // After flattening, one index only.
  PrimFunc g{"g", {A}, 0, make_for(i, 0, n, ForKind::kSerial, make_store(A, {i, 0, 0}, f32c(1)))};
  EXPECT_NO_THROW(verify(g, VerifyStage::kLowered));
  expect_rejected(g, VerifyStage::kFlattened, "after flattening");
}

TEST(TirVerifier, RejectsAStoreOfTheWrongType) {
  Var n("n"), i("i");
  auto A = buf("A", {n});
  PrimFunc f{"f",
             {A},
             0,
             make_for(i, 0, n, ForKind::kSerial, raw_store(A, {i}, make_const_int(i32(), 1)))};
  expect_rejected(f, VerifyStage::kLowered, "with type i32");
  // A binary whose operand types disagree.
  ExprNode bad;
  bad.kind = ExprKind::kBinary;
  bad.type = f32();
  bad.operands = {f32c(1), make_const(f64(), 2)};
  PrimFunc g{"g",
             {A},
             0,
             make_for(i, 0, n, ForKind::kSerial,
                      raw_store(A, {i}, Expr(std::make_shared<const ExprNode>(bad))))};
  expect_rejected(g, VerifyStage::kLowered, "expected f32");
}

TEST(TirVerifier, RejectsBuffersOutOfScope) {
  Var n("n"), i("i");
  auto A = buf("A", {n});
  auto tmp = buf("tmp", {4}, DType::kFloat32, BufferScope::kLocal);
  PrimFunc f{"f", {A}, 0, make_for(i, 0, n, ForKind::kSerial, make_store(A, {i}, load(tmp, {0})))};
  expect_rejected(f, VerifyStage::kLowered, "buffer tmp that is not in scope");
}

TEST(TirVerifier, RejectsRebindingALoopVariableInsideItsScope) {
  Var n("n"), i("i");
  auto A = buf("A", {n});
  PrimFunc f{"f",
             {A},
             0,
             make_for(i, 0, n, ForKind::kSerial,
                      make_for(i, 0, 2, ForKind::kSerial, make_store(A, {i}, f32c(1))))};
  expect_rejected(f, VerifyStage::kLowered, "bound again");
}

TEST(TirVerifier, EnforcesTheLoopKindsOfEachStage) {
  PrimFunc f = add_split(16, ForKind::kVectorized);
  EXPECT_NO_THROW(verify(f, VerifyStage::kLowered));
  expect_rejected(f, VerifyStage::kVectorized, "vectorized loop after vectorize");
  PrimFunc g = add_split(16, ForKind::kUnrolled);
  EXPECT_NO_THROW(verify(g, VerifyStage::kVectorized));
  expect_rejected(g, VerifyStage::kUnrolled, "unrolled loop after unroll");
}

TEST(TirVerifier, RejectsTeOnlyNodes) {
  Var n("n"), i("i");
  auto A = buf("A", {n});
  ExprNode read;
  read.kind = ExprKind::kTensorRead;
  read.type = f32();
  read.indices = {i};
  PrimFunc f{"f",
             {A},
             0,
             make_for(i, 0, n, ForKind::kSerial,
                      make_store(A, {i}, Expr(std::make_shared<const ExprNode>(read))))};
  expect_rejected(f, VerifyStage::kLowered, "TE-only node");
}

TEST(TirVerifier, RejectsALoweredRegionThatUsesAnUncapturedVariable) {
  Var n("n"), i("i");
  auto A = buf("A", {n});
  LoweredFunc lf;
  lf.func = PrimFunc{"f", {A}, 0, make_parallel_call(0, n)};
  ParallelRegion r;
  r.name = "f_parallel0";
  r.loop_var = i.expr();
  r.captured_buffers = {A};
  r.body = make_if(arith::lt(i, n), make_store(A, {i}, f32c(1)));
  lf.regions.push_back(r);
  EXPECT_THROW(verify(lf), InternalError);
  lf.regions[0].captured_vars = {n.expr()};
  EXPECT_NO_THROW(verify(lf));
  // A parallel call is not allowed in a plain PrimFunc.
  expect_rejected(lf.func, VerifyStage::kFlattened, "parallel_call");
}

}  // namespace
}  // namespace dynvm::tir::test
