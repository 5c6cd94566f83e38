// unroll (replication of constant-extent loops, serial fallback) and flatten_storage
// (row-major flat indices), each checked structurally and on values.
#include <gtest/gtest.h>

#include "kernels/tir/passes/passes.h"
#include "kernels/tir/verifier.h"
#include "tests/kernels/tir/tir_test_util.h"

namespace dynvm::tir::test {
namespace {

int count_stores(const Stmt& s) {
  return count_stmts(s, [](const Stmt& st) { return st.kind() == StmtKind::kStore; });
}
int count_all_loops(const Stmt& s) {
  return count_stmts(s, [](const Stmt& st) { return st.kind() == StmtKind::kFor; });
}

// C[i, u] = A[i, u] * 2 with u over [0, width) of the given kind.
PrimFunc scale_rows(int64_t width, ForKind kind) {
  Var n("n"), i("i"), u("u");
  auto A = buf("A", {n, width}), C = buf("C", {n, width});
  return PrimFunc{
      "scale_rows",
      {A, C},
      1,
      make_for(i, 0, n, ForKind::kSerial,
               make_for(u, 0, width, kind, make_store(C, {i, u}, load(A, {i, u}) * f32c(2))))};
}

TEST(TirUnroll, ReplicatesTheBodyOncePerIteration) {
  PrimFunc f = scale_rows(4, ForKind::kUnrolled);
  PrimFunc g = unroll(f);
  verify(g, VerifyStage::kUnrolled);
  EXPECT_EQ(count_loops(g.body, ForKind::kUnrolled), 0);
  EXPECT_EQ(count_all_loops(g.body), 1) << to_string(g);
  EXPECT_EQ(count_stores(g.body), 4);
  EXPECT_NE(to_string(g).find("C[i, 3] = (A[i, 3] * 2.0f)"), std::string::npos) << to_string(g);
  for (int64_t n : {1, 3, 17}) {
    expect_equivalent(f, g, {random_tensor({n, 4})}, "n=" + std::to_string(n));
  }
}

TEST(TirUnroll, NestedUnrolledLoopsMultiply) {
  Var n("n"), i("i"), a("a"), b("b");
  auto A = buf("A", {n, 2, 3}), C = buf("C", {n, 2, 3});
  PrimFunc f{"nested",
             {A, C},
             1,
             make_for(i, 0, n, ForKind::kSerial,
                      make_for(a, 0, 2, ForKind::kUnrolled,
                               make_for(b, 0, 3, ForKind::kUnrolled,
                                        make_store(C, {i, a, b}, load(A, {i, a, b}) + f32c(1)))))};
  PrimFunc g = unroll(f);
  EXPECT_EQ(count_stores(g.body), 6);
  EXPECT_EQ(count_all_loops(g.body), 1);
  for (int64_t n_val : {1, 5}) {
    expect_equivalent(f, g, {random_tensor({n_val, 2, 3})}, "n=" + std::to_string(n_val));
  }
}

TEST(TirUnroll, LargeOrSymbolicExtentsStaySerialLoops) {
  PrimFunc big = scale_rows(kMaxUnrollExtent + 1, ForKind::kUnrolled);
  PrimFunc g = unroll(big);
  EXPECT_EQ(count_loops(g.body, ForKind::kUnrolled), 0);
  EXPECT_EQ(count_all_loops(g.body), 2);
  EXPECT_EQ(count_stores(g.body), 1);
  expect_equivalent(big, g, {random_tensor({3, kMaxUnrollExtent + 1})}, "big");

  Var n("n"), i("i");
  auto A = buf("A", {n}), C = buf("C", {n});
  PrimFunc sym{
      "sym", {A, C}, 1, make_for(i, 0, n, ForKind::kUnrolled, make_store(C, {i}, load(A, {i})))};
  PrimFunc h = unroll(sym);
  EXPECT_EQ(count_loops(h.body, ForKind::kSerial), 1);
  expect_equivalent(sym, h, {random_tensor({9})}, "sym");
}

TEST(TirFlattenStorage, AccessesBecomeRowMajorFlatIndices) {
  PrimFunc f = transpose();
  PrimFunc g = simplify(flatten_storage(f));
  verify(g, VerifyStage::kFlattened);
  EXPECT_NE(to_string(g).find("B[m*i + j] = A[n*j + i]"), std::string::npos) << to_string(g);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 4}}) {
    expect_equivalent(f, g, {random_tensor({m, n})},
                      "m=" + std::to_string(m) + " n=" + std::to_string(n));
  }
}

TEST(TirFlattenStorage, ThreeDimsAndRankZero) {
  Var n("n"), i("i"), j("j"), k("k");
  auto A = buf("A", {n, 3, 5}), total = buf("total", {});
  Stmt body = make_seq(
      {make_store(total, {}, f32c(0)),
       make_for(i, 0, n, ForKind::kSerial,
                make_for(j, 0, 3, ForKind::kSerial,
                         make_for(k, 0, 5, ForKind::kSerial,
                                  make_store(total, {},
                                             load(total, {}) +
                                                 load(A, {i, j, k}) * index_value(k, f32())))))});
  PrimFunc f{"weighted_sum", {A, total}, 1, body};
  PrimFunc g = simplify(flatten_storage(f));
  verify(g, VerifyStage::kFlattened);
  std::string text = to_string(g);
  EXPECT_NE(text.find("A[i*15 + j*5 + k]"), std::string::npos) << text;
  EXPECT_NE(text.find("total[0] = (total[0] + "), std::string::npos) << text;
  for (int64_t n_val : {1, 4}) {
    expect_equivalent(f, g, {random_tensor({n_val, 3, 5})}, "n=" + std::to_string(n_val));
  }
}

TEST(TirFlattenStorage, LeavesVectorAccessesAlone) {
  PrimFunc f = vectorize(simplify(loop_partition(simplify(pairwise_product()))));
  PrimFunc g = flatten_storage(f);
  verify(g, VerifyStage::kFlattened);
  EXPECT_NE(to_string(g).find("A[ramp(io*32, 2, 16)]"), std::string::npos) << to_string(g);
  for (int64_t n : test_sizes()) {
    expect_equivalent(f, g, {random_tensor({n, 2})}, "n=" + std::to_string(n));
  }
}

}  // namespace
}  // namespace dynvm::tir::test
