// loop_partition: guarded loops split into a guard-free main part plus head / tail, with
// symbolic extents; loops whose guard cannot be reasoned about are left alone. Every case is
// run before and after on sizes that hit every remainder.
#include <gtest/gtest.h>

#include "kernels/tir/passes/passes.h"
#include "kernels/tir/verifier.h"
#include "tests/kernels/tir/tir_test_util.h"

namespace dynvm::tir::test {
namespace {

PrimFunc partition(const PrimFunc& f) {
  PrimFunc g = simplify(loop_partition(simplify(f)));
  verify(g, VerifyStage::kLowered);
  return g;
}

void expect_equivalent_1d(const PrimFunc& f, const PrimFunc& g, int num_inputs = 2) {
  for (int64_t n : test_sizes()) {
    std::vector<vm::Tensor> in;
    for (int k = 0; k < num_inputs; ++k) in.push_back(random_tensor({n}, DType::kFloat32, k));
    expect_equivalent(f, g, in, f.name + " n=" + std::to_string(n));
  }
}

TEST(TirLoopPartition, SplitGuardBecomesAGuardFreeMainLoopAndATail) {
  PrimFunc f = add_split(16);
  PrimFunc g = partition(f);
  ASSERT_EQ(g.body.kind(), StmtKind::kSeq) << to_string(g);
  const Stmt& main = g.body->seq[0];
  ASSERT_EQ(main.kind(), StmtKind::kFor);
  EXPECT_EQ(arith::to_string(main->extent), "n floordiv 16");
  EXPECT_EQ(count_ifs(main), 0);
  EXPECT_EQ(count_ifs(g.body), 0) << to_string(g);  // the tail's inner loop stops at n
  expect_equivalent_1d(f, g);
}

TEST(TirLoopPartition, TwoGuardedDimsLoseBothGuards) {
  PrimFunc f = transpose_tiled();
  PrimFunc g = partition(f);
  EXPECT_EQ(count_ifs(g.body), 0) << to_string(g);
  EXPECT_NE(to_string(g).find("for (jo, 0, m floordiv 8):"), std::string::npos) << to_string(g);
  for (auto [m, n] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 17}, {8, 16}, {129, 7}, {20, 33}}) {
    expect_equivalent(f, g, {random_tensor({m, n})},
                      "m=" + std::to_string(m) + " n=" + std::to_string(n));
  }
}

TEST(TirLoopPartition, LowerBoundGuardMakesAHeadThatTakesTheElseBranch) {
  Var n("n"), i("i");
  auto A = buf("A", {n}), C = buf("C", {n});
  Stmt body =
      make_if(arith::ge(i, 3), make_store(C, {i}, load(A, {i})), make_store(C, {i}, f32c(0)));
  PrimFunc f{"head", {A, C}, 1, make_for(i, 0, n, ForKind::kSerial, body)};
  PrimFunc g = partition(f);
  EXPECT_EQ(count_ifs(g.body), 0) << to_string(g);
  expect_equivalent_1d(f, g, 1);
}

TEST(TirLoopPartition, NegativeCoefficientGuard) {
  // 20 - 3i <= 0 holds from i = 7 on.
  Var n("n"), i("i");
  auto A = buf("A", {n}), C = buf("C", {n});
  Stmt body = make_if(arith::le(arith::make_int(20) - i * 3, 0),
                      make_store(C, {i}, load(A, {i}) + f32c(1)), make_store(C, {i}, f32c(5)));
  PrimFunc f{"neg", {A, C}, 1, make_for(i, 0, n, ForKind::kSerial, body)};
  PrimFunc g = partition(f);
  EXPECT_EQ(count_ifs(g.body), 0) << to_string(g);
  expect_equivalent_1d(f, g, 1);
}

TEST(TirLoopPartition, GuardOverAnInnerLoopKeepsItInTheTail) {
  // Partitioning io: the guard also depends on ii, so the tail keeps it (then ii's own
  // partition takes it away).
  PrimFunc f = add_split(4);
  PrimFunc once = simplify(loop_partition(simplify(f)));
  expect_equivalent_1d(f, once);
}

TEST(TirLoopPartition, EachAtomIsRemovedByTheLoopItIsAbout) {
  // if (i < n - 2 && j < 3): partitioning i keeps `j < 3` in i's main part, where
  // partitioning j removes it.
  Var n("n"), i("i"), j("j");
  auto A = buf("A", {n}), C = buf("C", {n, 5});
  Stmt store = make_store(C, {i, j}, load(A, {i}));
  Stmt body = make_for(i, 0, n, ForKind::kSerial,
                       make_for(j, 0, 5, ForKind::kSerial,
                                make_if(arith::logical_and(arith::lt(i, n - 2), arith::lt(j, 3)),
                                        store, make_store(C, {i, j}, f32c(0)))));
  PrimFunc f{"atoms", {A, C}, 1, body};
  PrimFunc g = partition(f);
  EXPECT_EQ(count_ifs(g.body), 0) << to_string(g);
  EXPECT_NE(to_string(g).find("for (j, 0, 3):"), std::string::npos) << to_string(g);
  expect_equivalent_1d(f, g, 1);
}

// A padded copy, as conv's Pad stage lowers: C[i] = 2 <= i < n + 2 ? A[clamp(i - 2)] : 0 over
// [0, n + 4), split by 16 with the tail guard outside the select.
PrimFunc padded_copy(ForKind inner) {
  Var n("n"), io("io"), ii("ii");
  auto A = buf("A", {n}), C = buf("C", {n + 4});
  arith::Expr i = io * 16 + ii;
  arith::Expr inside = arith::logical_and(arith::ge(i, 2), arith::lt(i, n + 2));
  arith::Expr clamped = arith::max(arith::min(i - 2, n - 1), 0);
  Expr value = select(index_value(inside, boolean()), load(A, {clamped}), f32c(0));
  Stmt body =
      make_for(io, 0, arith::floordiv(n + 19, 16), ForKind::kSerial,
               make_for(ii, 0, 16, inner, make_if(arith::lt(i, n + 4), make_store(C, {i}, value))));
  return PrimFunc{"padded_copy", {A, C}, 1, body};
}

int count_selects(const Stmt& s) {
  return count_exprs(s, [](const Expr& e) { return e.kind() == ExprKind::kSelect; });
}

TEST(TirLoopPartition, SelectGuardsArePartitionedLikeIfs) {
  // The main part copies with neither the select nor the clamps (simplify proves them
  // no-ops there) nor the split's guard: the second guard is found by partitioning the
  // main part again.
  PrimFunc f = padded_copy(ForKind::kVectorized);
  PrimFunc g = partition(f);
  const std::string text = to_string(g);
  ASSERT_EQ(g.body.kind(), StmtKind::kSeq) << text;
  // The main part is the one whose inner loop still runs 16 lanes wide.
  Stmt main;
  for (const Stmt& part : g.body->seq) {
    int full = count_stmts(part, [](const Stmt& st) {
      return st.kind() == StmtKind::kFor && st->for_kind == ForKind::kVectorized &&
             st->extent.is_int_imm() && st->extent.int_value() == 16;
    });
    if (full == 1) main = part;
  }
  ASSERT_TRUE(main.defined()) << text;
  EXPECT_EQ(count_stmts(main, [](const Stmt& st) { return st.kind() == StmtKind::kFor; }), 2)
      << to_string(main);
  EXPECT_EQ(count_ifs(main), 0) << text;
  EXPECT_EQ(count_selects(main), 0) << text;
  // Its loop bounds keep their clamps; its body has none.
  const std::string body = to_string(main->body);
  EXPECT_EQ(body.find("max("), std::string::npos) << text;
  EXPECT_EQ(body.find("min("), std::string::npos) << text;
  expect_equivalent_1d(f, g, 1);
}

TEST(TirLoopPartition, ExactHeadOfASelectTakesItsSecondValue) {
  Var n("n"), i("i");
  auto A = buf("A", {n}), C = buf("C", {n});
  Expr value = select(index_value(arith::ge(i, 3), boolean()), load(A, {i}), f32c(7));
  PrimFunc f{
      "select_head", {A, C}, 1, make_for(i, 0, n, ForKind::kSerial, make_store(C, {i}, value))};
  PrimFunc g = partition(f);
  EXPECT_EQ(count_selects(g.body), 0) << to_string(g);
  expect_equivalent_1d(f, g, 1);
}

// A guard whose offset is not affine in a short constant inner loop (a resize's phase r:
// neighbour i + floordiv(2 r - 1, 4)) is bounded by that loop's values one by one, so the
// outer loop still gets a guard-free main part.
TEST(TirLoopPartition, ShortInnerLoopsAreBoundedValueByValue) {
  Var n("n"), i("i"), r("r");
  auto A = buf("A", {n}), C = buf("C", {n * 2});
  const arith::Expr lo = i + arith::floordiv(r * 2 - 1, 4);
  auto clamped = [&](const arith::Expr& at) { return arith::max(arith::min(at, n - 1), 0); };
  Expr inside = index_value(arith::logical_and(arith::ge(lo, 0), arith::lt(lo + 1, n)), boolean());
  // Both sides clamped (select evaluates both): the guard only tells where clamps vanish.
  Expr sum = load(A, {clamped(lo)}) + load(A, {clamped(lo + 1)});
  Expr value = select(inside, sum, sum);
  PrimFunc f{"phases", {A, C}, 1,
             make_for(i, 0, n, ForKind::kSerial,
                      make_for(r, 0, 2, ForKind::kSerial, make_store(C, {i * 2 + r}, value)))};
  PrimFunc g = partition(f);
  ASSERT_EQ(g.body.kind(), StmtKind::kSeq) << to_string(g);
  int free_parts = 0;  // neither the select nor a clamp
  for (const Stmt& part : g.body->seq) {
    const std::string text = to_string(part->body);
    free_parts += count_selects(part) == 0 && text.find("max(") == std::string::npos ? 1 : 0;
  }
  EXPECT_GE(free_parts, 1) << to_string(g);
  for (int64_t size : test_sizes()) {
    expect_equivalent(f, g, {random_tensor({size}, DType::kFloat32, 0)},
                      "phases n=" + std::to_string(size));
  }
}

TEST(TirLoopPartition, LeavesGuardsItCannotReasonAbout) {
  Var n("n"), i("i"), x("x");
  auto A = buf("A", {n}), C = buf("C", {n});
  auto idx = buf("idx", {n}, DType::kInt64);
  // Not affine: i*i < n.  Data dependent: i + idx[i] < n.  Not an inequality: i % 2 == 0.
  Stmt nonlinear =
      make_if(arith::lt(i * i, n), make_store(C, {i}, load(A, {i})), make_store(C, {i}, f32c(0)));
  Stmt data = make_let_index(
      x, load(idx, {i}),
      make_if(arith::lt(i + x, n), make_store(C, {i}, f32c(1)), make_store(C, {i}, f32c(2))));
  Stmt parity = make_if(arith::eq(arith::floormod(i, 2), 0), make_store(C, {i}, f32c(3)),
                        make_store(C, {i}, f32c(4)));
  for (const Stmt& body : {nonlinear, data, parity}) {
    PrimFunc f{"opaque", {A, idx, C}, 2, make_for(i, 0, n, ForKind::kSerial, body)};
    PrimFunc g = loop_partition(f);
    EXPECT_EQ(g.body.get(), f.body.get()) << to_string(g);
  }
}

TEST(TirLoopPartition, TailOfAVectorizedLoopStaysVectorized) {
  // Its symbolic extent (0..15) is for vectorize to make one masked vector iteration.
  PrimFunc f = add_split(16, ForKind::kVectorized);
  PrimFunc g = partition(f);
  EXPECT_EQ(count_loops(g.body, ForKind::kVectorized), 2) << to_string(g);
  int symbolic_vectorized = count_stmts(g.body, [](const Stmt& st) {
    return st.kind() == StmtKind::kFor && st->for_kind == ForKind::kVectorized &&
           !st->extent.is_int_imm();
  });
  EXPECT_EQ(symbolic_vectorized, 1) << to_string(g);
  EXPECT_EQ(count_ifs(g.body), 0);
  expect_equivalent_1d(f, g);
}

TEST(TirLoopPartition, TailOfAnUnrolledLoopStaysUnrolled) {
  // Its symbolic extent is for specialize_extents to make constant (unroll makes serial
  // whatever stays symbolic).
  PrimFunc f = add_split(8, ForKind::kUnrolled);
  PrimFunc g = partition(f);
  int symbolic_unrolled = count_stmts(g.body, [](const Stmt& st) {
    return st.kind() == StmtKind::kFor && st->for_kind == ForKind::kUnrolled &&
           !st->extent.is_int_imm();
  });
  EXPECT_EQ(symbolic_unrolled, 1) << to_string(g);
  EXPECT_EQ(count_ifs(g.body), 0) << to_string(g);
  expect_equivalent_1d(f, g);
}

TEST(TirLoopPartition, UnrolledTileLoopKeepsConstantRangeAndItsGuard) {
  // A register tile of 3 vectors of 16: splitting c at a symbolic point would leave copies
  // indexed by a variable (and the tile in memory). c stays whole and unrolled with its
  // guard, and the vectorized loop inside is what gets partitioned.
  Var n("n"), io("io"), c("c"), ci("ci");
  auto A = buf("A", {n}), B = buf("B", {n}), C = buf("C", {n});
  arith::Expr i = io * 48 + c * 16 + ci;
  Stmt store = make_store(C, {i}, load(A, {i}) + load(B, {i}));
  Stmt tile = make_for(c, 0, 3, ForKind::kUnrolled,
                       make_for(ci, 0, 16, ForKind::kVectorized, make_if(arith::lt(i, n), store)));
  PrimFunc f{"tile", {A, B, C}, 2,
             make_for(io, 0, arith::floordiv(n + 47, 48), ForKind::kSerial, tile)};
  PrimFunc g = partition(f);
  int unrolled = 0;
  for_each_stmt(g.body, [&](const Stmt& st) {
    if (st.kind() != StmtKind::kFor || st->for_kind != ForKind::kUnrolled) return;
    ++unrolled;
    EXPECT_TRUE(st->min.is_int_imm() && st->extent.is_int_imm()) << to_string(g);
  });
  EXPECT_GE(unrolled, 1) << to_string(g);
  expect_equivalent_1d(f, g);
}

}  // namespace
}  // namespace dynvm::tir::test
