// The simplify pass: index expressions simplified with loop ranges in scope, extent-1 and
// empty loops removed, decided ifs removed; outputs unchanged.
#include <gtest/gtest.h>

#include "kernels/tir/passes/passes.h"
#include "kernels/tir/verifier.h"
#include "tests/kernels/tir/tir_test_util.h"

namespace dynvm::tir::test {
namespace {

// C[i] = A[i] over [n], written the long way round.
PrimFunc copy_with(
    const std::function<Stmt(const Var& i, const BufferRef& A, const BufferRef& C)>& body) {
  Var n("n"), i("i");
  auto A = buf("A", {n}), C = buf("C", {n});
  return PrimFunc{"copy", {A, C}, 1, make_for(i, 0, n, ForKind::kSerial, body(i, A, C))};
}

void expect_equivalent_on_sizes(const PrimFunc& before, const PrimFunc& after) {
  for (int64_t n : test_sizes()) {
    expect_equivalent(before, after, {random_tensor({n})}, "n=" + std::to_string(n));
  }
}

TEST(TirSimplify, RemovesLoopsOfExtentOne) {
  PrimFunc f = copy_with([](const Var& i, const BufferRef& A, const BufferRef& C) {
    Var j("j");
    return make_for(j, 0, 1, ForKind::kSerial, make_store(C, {i + j}, load(A, {i + j})));
  });
  PrimFunc g = simplify(f);
  EXPECT_EQ(count_stmts(g.body, [](const Stmt& s) { return s.kind() == StmtKind::kFor; }), 1);
  EXPECT_NE(to_string(g).find("C[i] = A[i]"), std::string::npos) << to_string(g);
  expect_equivalent_on_sizes(f, g);
}

TEST(TirSimplify, RemovesIfsDecidedByLoopRanges) {
  PrimFunc f = copy_with([](const Var& i, const BufferRef& A, const BufferRef& C) {
    return make_seq(
        {make_if(arith::lt(i, 0), make_store(C, {i}, f32c(-1)), make_store(C, {i}, load(A, {i}))),
         make_if(arith::ge(i + 1, 1), make_store(C, {i}, load(C, {i}) * f32c(2)))});
  });
  PrimFunc g = simplify(f);
  EXPECT_EQ(count_ifs(g.body), 0) << to_string(g);
  expect_equivalent_on_sizes(f, g);
}

TEST(TirSimplify, SimplifiesIndicesWithLoopRanges) {
  Var n("n"), io("io"), ii("ii");
  auto A = buf("A", {n * 16}), C = buf("C", {n, 16});
  arith::Expr flat = io * 16 + ii;
  Stmt body = make_for(
      io, 0, n, ForKind::kSerial,
      make_for(
          ii, 0, 16, ForKind::kSerial,
          make_store(C, {arith::floordiv(flat, 16), arith::floormod(flat, 16)}, load(A, {flat}))));
  PrimFunc f{"reshape", {C, A}, 0, body};  // C first: its dims bind n
  PrimFunc g = simplify(f);
  EXPECT_NE(to_string(g).find("C[io, ii] = A[io*16 + ii]"), std::string::npos) << to_string(g);
}

TEST(TirSimplify, LoopOfAtMostOneIterationBecomesAnIfAtItsMin) {
  // A split copy's tail as loop_partition leaves it: io over [n/16, ceil(n/16)), at most
  // one iteration. Simplified, io is gone: an if around the body at io = n floordiv 16.
  Var n("n"), io("io"), ii("ii"), to("tail_o"), ti("ti");
  auto A = buf("A", {n}), C = buf("C", {n});
  arith::Expr main_end = arith::floordiv(n, 16);
  Stmt main = make_for(io, 0, main_end, ForKind::kSerial,
                       make_for(ii, 0, 16, ForKind::kSerial,
                                make_store(C, {io * 16 + ii}, load(A, {io * 16 + ii}))));
  Stmt tail = make_for(to, main_end, arith::floordiv(n + 15, 16) - main_end, ForKind::kSerial,
                       make_for(ti, 0, n - to * 16, ForKind::kSerial,
                                make_store(C, {to * 16 + ti}, load(A, {to * 16 + ti}) * f32c(2))));
  PrimFunc f{"copy", {A, C}, 1, make_seq({main, tail})};
  EXPECT_EQ(to_string(simplify(f)), to_string(f));  // before vectorize: loops stay
  PrimFunc g = simplify(f, true);
  EXPECT_EQ(count_stmts(g.body, [](const Stmt& s) { return s.kind() == StmtKind::kFor; }), 3)
      << to_string(g);
  EXPECT_EQ(count_ifs(g.body), 1) << to_string(g);
  EXPECT_EQ(to_string(g).find("tail_o"), std::string::npos) << to_string(g);
  expect_equivalent_on_sizes(f, g);
}

TEST(TirSimplify, RemovesEmptyLoopsAndKeepsGpuLoops) {
  Var n("n"), i("i"), t("t");
  auto A = buf("A", {n});
  PrimFunc f{"f",
             {A},
             0,
             make_seq({make_for(i, 0, 0, ForKind::kSerial, make_store(A, {i}, f32c(1))),
                       make_for(t, 0, 1, ForKind::kGpuThread, make_store(A, {t}, f32c(2)))})};
  PrimFunc g = simplify(f);
  ASSERT_EQ(g.body.kind(), StmtKind::kFor);
  EXPECT_EQ(g.body->for_kind, ForKind::kGpuThread);
}

TEST(TirSimplify, PreservesOutputsOfTheTestKernels) {
  for (const PrimFunc& f : {add_split(16), add_split(7, ForKind::kVectorized)}) {
    PrimFunc g = simplify(f);
    verify(g, VerifyStage::kLowered);
    for (int64_t n : test_sizes()) {
      expect_equivalent(
          f, g, {random_tensor({n}, DType::kFloat32, 1), random_tensor({n}, DType::kFloat32, 2)},
          f.name + " n=" + std::to_string(n));
    }
  }
  PrimFunc t = transpose_tiled();
  expect_equivalent(t, simplify(t), {random_tensor({17, 5})}, "transpose_tiled");
}

}  // namespace
}  // namespace dynvm::tir::test
