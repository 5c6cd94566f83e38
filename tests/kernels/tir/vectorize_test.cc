// vectorize: vector loads / stores of the loop's extent with the right strides, broadcasts
// for loop-invariant values, a vector part plus one masked vector iteration for symbolic
// extents (a scalar remainder where inactive lanes could trap), and a serial fallback for
// bodies it cannot vectorize — each checked on values (the reference interpreter reads and
// writes only a masked access's active lanes, and fails an access out of bounds).
#include <gtest/gtest.h>

#include "kernels/tir/passes/passes.h"
#include "kernels/tir/verifier.h"
#include "tests/kernels/tir/tir_test_util.h"

namespace dynvm::tir::test {
namespace {

PrimFunc vectorized(const PrimFunc& f) {
  PrimFunc g = vectorize(simplify(loop_partition(simplify(f))));
  verify(g, VerifyStage::kVectorized);
  return g;
}

int count_vector_stores(const Stmt& s, int lanes) {
  return count_stmts(s, [&](const Stmt& st) {
    return st.kind() == StmtKind::kStore && st->value.type().lanes == lanes;
  });
}

int count_masked_stores(const Stmt& s) {
  return count_stmts(
      s, [&](const Stmt& st) { return st.kind() == StmtKind::kStore && st->active.defined(); });
}

int count_vector_loads(const Stmt& s, int lanes, const std::string& stride) {
  return count_exprs(s, [&](const Expr& e) {
    return e.kind() == ExprKind::kBufferLoad && e.type().lanes == lanes &&
           arith::to_string(e->stride) == stride;
  });
}

// C[i] = body(i) over [n] with i vectorized (symbolic extent).
PrimFunc elementwise(const std::function<Expr(const Var& i, const BufferRef& A)>& value,
                     ForKind kind = ForKind::kVectorized) {
  Var n("n"), i("i");
  auto A = buf("A", {n}), C = buf("C", {n});
  return PrimFunc{
      "elementwise", {A, C}, 1, make_for(i, 0, n, kind, make_store(C, {i}, value(i, A)))};
}

void expect_equivalent_on_sizes(const PrimFunc& f, const PrimFunc& g, int inputs = 1) {
  for (int64_t n : test_sizes()) {
    std::vector<vm::Tensor> in;
    for (int k = 0; k < inputs; ++k) in.push_back(random_tensor({n}, DType::kFloat32, k + 1));
    expect_equivalent(f, g, in, "n=" + std::to_string(n));
  }
}

TEST(TirVectorize, SplitAddBecomesSixteenLaneVectorCode) {
  PrimFunc f = add_split(16, ForKind::kVectorized);
  PrimFunc g = vectorized(f);
  EXPECT_EQ(count_loops(g.body, ForKind::kVectorized), 0);
  // The main part, and the split's tail (n - io*16, at most 16) as one masked iteration
  // with no loop and no test of its own.
  EXPECT_EQ(count_vector_stores(g.body, 16), 2) << to_string(g);
  EXPECT_EQ(count_masked_stores(g.body), 1) << to_string(g);
  EXPECT_EQ(count_vector_loads(g.body, 16, "1"), 4) << to_string(g);
  EXPECT_EQ(count_ifs(g.body), 0) << to_string(g);
  EXPECT_NE(to_string(g).find("C[ramp(io*16, 1, 16)] = (A[ramp(io*16, 1, 16)] + "
                              "B[ramp(io*16, 1, 16)])"),
            std::string::npos)
      << to_string(g);
  EXPECT_NE(to_string(g).find("C[ramp(io*16, 1, 16, active n - io*16)]"), std::string::npos)
      << to_string(g);
  expect_equivalent_on_sizes(f, g, 2);
}

TEST(TirVectorize, StrideTwoLoads) {
  PrimFunc f = pairwise_product();
  PrimFunc g = vectorized(f);
  EXPECT_EQ(count_vector_loads(g.body, 16, "2"), 4) << to_string(g);  // main, masked tail
  EXPECT_NE(to_string(g).find("A[ramp(io*32 + 1, 2, 16)]"), std::string::npos) << to_string(g);
  for (int64_t n : test_sizes()) {
    expect_equivalent(f, g, {random_tensor({n, 2})}, "n=" + std::to_string(n));
  }
}

TEST(TirVectorize, LoopInvariantLoadStaysScalarAndIsBroadcast) {
  Var n("n"), i("i");
  auto A = buf("A", {n}), s = buf("s", {1}), C = buf("C", {n});
  PrimFunc f{"scale",
             {A, s, C},
             2,
             make_for(i, 0, 8, ForKind::kVectorized,
                      make_if(arith::lt(i, n), make_store(C, {i}, load(A, {i}) * load(s, {0}))))};
  // Guarded by i < n: loop_partition turns this into a loop up to min(n, 8) that is no
  // longer of constant extent: one masked iteration of 8 lanes; outputs must still match.
  PrimFunc g = vectorized(f);
  for (int64_t n_val : {1, 3, 7, 8}) {
    expect_equivalent(f, g, {random_tensor({n_val}), random_tensor({1}, DType::kFloat32, 9)},
                      "n=" + std::to_string(n_val));
  }
  PrimFunc plain{
      "scale",
      {A, s, C},
      2,
      make_for(i, 0, n, ForKind::kVectorized, make_store(C, {i}, load(A, {i}) * load(s, {0})))};
  PrimFunc h = vectorized(plain);
  EXPECT_EQ(count_exprs(h.body,
                        [](const Expr& e) {
                          return e.kind() == ExprKind::kBroadcast &&
                                 e->operands[0].kind() == ExprKind::kBufferLoad;
                        }),
            2)  // the vector part's and the masked remainder's
      << to_string(h);
  for (int64_t n_val : test_sizes()) {
    expect_equivalent(plain, h, {random_tensor({n_val}), random_tensor({1}, DType::kFloat32, 9)},
                      "n=" + std::to_string(n_val));
  }
}

TEST(TirVectorize, SymbolicExtentSplitsIntoVectorPartAndMaskedRemainder) {
  PrimFunc f = elementwise(
      [](const Var& i, const BufferRef& A) { return load(A, {i}) * f32c(3) + f32c(1); });
  PrimFunc g = vectorized(f);
  EXPECT_EQ(count_vector_stores(g.body, 16), 2) << to_string(g);
  EXPECT_EQ(count_masked_stores(g.body), 1) << to_string(g);  // the remainder
  EXPECT_EQ(count_vector_stores(g.body, 1), 0) << to_string(g);
  EXPECT_EQ(count_ifs(g.body), 1) << to_string(g);  // it runs when n % 16 != 0
  expect_equivalent_on_sizes(f, g);
}

TEST(TirVectorize, IntegerDivisionByALoadedValueKeepsAScalarRemainder) {
  // Inactive lanes would divide by the zeros a masked load gives them.
  Var n("n"), i("i");
  auto A = buf("A", {n}, DType::kInt32), D = buf("D", {n}, DType::kInt32),
       C = buf("C", {n}, DType::kInt32);
  PrimFunc f{
      "divide",
      {A, D, C},
      2,
      make_for(i, 0, n, ForKind::kVectorized, make_store(C, {i}, load(A, {i}) / load(D, {i})))};
  PrimFunc g = vectorized(f);
  EXPECT_EQ(count_vector_stores(g.body, 16), 1) << to_string(g);
  EXPECT_EQ(count_masked_stores(g.body), 0) << to_string(g);
  EXPECT_EQ(count_vector_stores(g.body, 1), 1) << to_string(g);
}

TEST(TirVectorize, IndexValuesAndIndexConditionsBecomeVectors) {
  PrimFunc f = elementwise([](const Var& i, const BufferRef& A) {
    Expr fi = index_value(i, f32());
    // A disjunction: loop_partition does not split on it, so the select reaches vectorize.
    arith::Expr cond = arith::logical_or(arith::lt(i * 2, 9), arith::gt(i, 20));
    return select(index_value(cond, boolean()), load(A, {i}) + fi, fi);
  });
  PrimFunc g = vectorized(f);
  EXPECT_EQ(count_vector_stores(g.body, 16), 2) << to_string(g);
  EXPECT_GE(count_exprs(g.body,
                        [](const Expr& e) {
                          return e.kind() == ExprKind::kIndexValue && e.type().lanes == 16;
                        }),
            1)
      << to_string(g);
  expect_equivalent_on_sizes(f, g);
}

TEST(TirVectorize, ConstantExtentUsesThatManyLanes) {
  Var n("n"), io("io"), ii("ii");
  auto A = buf("A", {n, 7}), C = buf("C", {n, 7});
  PrimFunc f{"rows",
             {A, C},
             1,
             make_for(io, 0, n, ForKind::kSerial,
                      make_for(ii, 0, 7, ForKind::kVectorized,
                               make_store(C, {io, ii}, call(Intrinsic::kAbs, load(A, {io, ii})))))};
  PrimFunc g = vectorized(f);
  EXPECT_EQ(count_vector_stores(g.body, 7), 1) << to_string(g);
  for (int64_t n_val : {1, 3, 17}) {
    expect_equivalent(f, g, {random_tensor({n_val, 7})}, "n=" + std::to_string(n_val));
  }
}

TEST(TirVectorize, TransposeVectorizesTheStoreAndGathersWithSymbolicStride) {
  PrimFunc f = transpose(ForKind::kVectorized);
  PrimFunc g = vectorized(f);
  EXPECT_EQ(count_vector_loads(g.body, 16, "n"), 2) << to_string(g);  // a masked gather too
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {17, 3}, {40, 9}}) {
    expect_equivalent(f, g, {random_tensor({m, n})},
                      "m=" + std::to_string(m) + " n=" + std::to_string(n));
  }
}

TEST(TirVectorize, FallsBackToSerialWhenTheBodyCannotBeVectorized) {
  Var n("n"), i("i"), j("j");
  auto A = buf("A", {n}), C = buf("C", {n});
  auto acc = buf("acc", {1});
  std::vector<PrimFunc> cases;
  // Not affine: A[i floordiv 2].
  cases.push_back(elementwise(
      [](const Var& i, const BufferRef& A) { return load(A, {arith::floordiv(i, 2)}); }));
  // A reduction: acc[0] is stored at an index that does not move with i.
  cases.push_back(
      PrimFunc{"reduce",
               {A, acc},
               1,
               make_seq({make_store(acc, {0}, f32c(0)),
                         make_for(i, 0, n, ForKind::kVectorized,
                                  make_store(acc, {0}, load(acc, {0}) + load(A, {i})))})});
  // A dependence between iterations: C[i] reads C[i - 1], written by the previous one.
  cases.push_back(
      PrimFunc{"scan",
               {A, C},
               1,
               make_seq({make_store(C, {0}, load(A, {0})),
                         make_for(i, 1, n - 1, ForKind::kVectorized,
                                  make_store(C, {i}, load(C, {i - 1}) + load(A, {i})))})});
  // An inner loop.
  Stmt accumulate =
      make_for(j, 0, 3, ForKind::kSerial, make_store(C, {i}, load(C, {i}) + load(A, {i})));
  cases.push_back(PrimFunc{"inner",
                           {A, C},
                           1,
                           make_for(i, 0, n, ForKind::kVectorized,
                                    make_seq({make_store(C, {i}, f32c(0)), accumulate}))});
  for (const PrimFunc& f : cases) {
    PrimFunc g = vectorized(f);
    EXPECT_EQ(count_loops(g.body, ForKind::kVectorized), 0) << to_string(g);
    EXPECT_EQ(count_exprs(g.body, [](const Expr& e) { return e.type().lanes > 1; }), 0)
        << to_string(g);
    for (int64_t n_val : test_sizes()) {
      expect_equivalent(f, g, {random_tensor({n_val})}, f.name + " n=" + std::to_string(n_val));
    }
  }
}

}  // namespace
}  // namespace dynvm::tir::test
