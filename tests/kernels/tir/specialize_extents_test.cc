// specialize_extents: the symbolic remainder loops that loop partition leaves get one copy per
// value (constant extents that unroll can replicate), one dispatch for every loop with that
// extent, a fallback only where the bounds do not cover every value, and no more copies than
// allowed. Every case is run before and after on sizes that hit every remainder.
#include <gtest/gtest.h>

#include "kernels/tir/lower.h"
#include "kernels/tir/passes/passes.h"
#include "kernels/tir/verifier.h"
#include "tests/kernels/tir/tir_test_util.h"

namespace dynvm::tir::test {
namespace {

// What lower() runs up to and including specialize_extents.
PrimFunc partition_and_specialize(const PrimFunc& f, int64_t max_copies = 8) {
  PrimFunc g = specialize_extents(simplify(loop_partition(simplify(f))), max_copies);
  verify(g, VerifyStage::kLowered);
  return g;
}

// Unrolled loops whose extent is still symbolic (unroll would make them serial).
int count_symbolic_unrolled(const Stmt& s) {
  return count_stmts(s, [](const Stmt& st) {
    return st.kind() == StmtKind::kFor && st->for_kind == ForKind::kUnrolled &&
           !st->extent.is_int_imm();
  });
}

std::vector<int64_t> unrolled_extents(const Stmt& s) {
  std::vector<int64_t> out;
  for_each_stmt(s, [&](const Stmt& st) {
    if (st.kind() == StmtKind::kFor && st->for_kind == ForKind::kUnrolled &&
        st->extent.is_int_imm()) {
      out.push_back(st->extent.int_value());
    }
  });
  return out;
}

void expect_equivalent_1d(const PrimFunc& f, const PrimFunc& g, int num_inputs,
                          const std::vector<int64_t>& sizes) {
  for (int64_t n : sizes) {
    std::vector<vm::Tensor> in;
    for (int k = 0; k < num_inputs; ++k) in.push_back(random_tensor({n}, DType::kFloat32, k));
    expect_equivalent(f, g, in, f.name + " n=" + std::to_string(n));
  }
}

const std::vector<int64_t>& every_remainder_of_8() {
  static const std::vector<int64_t> sizes{1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 23, 100};
  return sizes;
}

// A register tile as the matmul schedule makes it: S[i] = sum_r A[i, r] for rows split by 4,
// the tile's accumulator initialised, updated inside the r loop and stored, each row loop
// unrolled and guarded (rows past m).
PrimFunc tiled_row_sum() {
  Var m("m"), k("k"), io("io"), i0("i0"), i1("i1"), i2("i2"), r("r");
  auto A = buf("A", {m, k}), S = buf("S", {m});
  auto acc = buf("acc", {4}, DType::kFloat32, BufferScope::kLocal);
  auto row = [&](const Var& i) { return io * 4 + i; };
  auto guarded = [&](const Var& i, Stmt s) { return make_if(arith::lt(row(i), m), std::move(s)); };
  Stmt init = make_for(i0, 0, 4, ForKind::kUnrolled, guarded(i0, make_store(acc, {i0}, f32c(0))));
  Stmt update = make_for(
      r, 0, k, ForKind::kSerial,
      make_for(i1, 0, 4, ForKind::kUnrolled,
               guarded(i1, make_store(acc, {i1}, load(acc, {i1}) + load(A, {row(i1), r})))));
  Stmt store = make_for(i2, 0, 4, ForKind::kUnrolled,
                        guarded(i2, make_store(S, {row(i2)}, load(acc, {i2}))));
  Stmt body = make_for(io, 0, arith::floordiv(m + 3, 4), ForKind::kSerial,
                       make_allocate(acc, make_seq({init, update, store})));
  return PrimFunc{"tiled_row_sum", {A, S}, 1, body};
}

TEST(TirSpecializeExtents, RemainderOfAnUnrolledSplitGetsOneCopyPerValue) {
  PrimFunc f = add_split(8, ForKind::kUnrolled);
  PrimFunc g = partition_and_specialize(f);
  EXPECT_EQ(count_symbolic_unrolled(g.body), 0) << to_string(g);
  // The main loop's 8 and one copy per remainder 1..7; the bounds prove there is no other
  // value, so the chain has no fallback: 7 copies, 6 tests.
  std::vector<int64_t> extents = unrolled_extents(g.body);
  EXPECT_EQ(extents, (std::vector<int64_t>{8, 1, 2, 3, 4, 5, 6, 7})) << to_string(g);
  EXPECT_EQ(count_ifs(g.body), 6) << to_string(g);
  expect_equivalent_1d(f, g, 2, every_remainder_of_8());
  // And through the whole pipeline: no loop is left in the tail.
  LoweredFunc lf = lower(f);
  for (int64_t n : every_remainder_of_8()) {
    expect_equivalent(
        f, lf, {random_tensor({n}, DType::kFloat32, 0), random_tensor({n}, DType::kFloat32, 1)},
        "lowered n=" + std::to_string(n));
  }
}

TEST(TirSpecializeExtents, OneDispatchCoversEveryLoopWithThatExtentOutsideTheInnerLoop) {
  PrimFunc f = tiled_row_sum();
  PrimFunc g = partition_and_specialize(f);
  EXPECT_EQ(count_symbolic_unrolled(g.body), 0) << to_string(g);
  // Remainders 1..3: 3 copies of the tile (init, r loop, store), 2 tests, none inside the r
  // loop: the tail's body is the dispatch itself.
  EXPECT_EQ(count_ifs(g.body), 2) << to_string(g);
  int r_loops = count_stmts(g.body, [](const Stmt& st) {
    return st.kind() == StmtKind::kFor && st->loop_var->name == "r";
  });
  EXPECT_EQ(r_loops, 1 + 3) << to_string(g);
  for_each_stmt(g.body, [&](const Stmt& st) {
    if (st.kind() == StmtKind::kFor && st->loop_var->name == "r") {
      EXPECT_EQ(count_ifs(st->body), 0) << to_string(g);
    }
  });
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
    expect_equivalent(f, g, {random_tensor({m, 5})}, "m=" + std::to_string(m));
  }
}

TEST(TirSpecializeExtents, ValuesTheBoundsDoNotExcludeFallBackToTheOriginalLoop) {
  // Extent min(n, 3): 1..3 get copies; 0 (n = 0) is possible, so the chain ends in the
  // original loop.
  Var n("n"), i("i"), j("j");
  auto A = buf("A", {n}), C = buf("C", {n});
  PrimFunc f{"clamped",
             {A, C},
             1,
             make_seq({make_for(i, 0, n, ForKind::kSerial, make_store(C, {i}, f32c(0))),
                       make_for(j, 0, arith::min(n, 3), ForKind::kUnrolled,
                                make_store(C, {j}, load(A, {j}) + f32c(1)))})};
  PrimFunc g = specialize_extents(f, 8);
  verify(g, VerifyStage::kLowered);
  EXPECT_EQ(count_ifs(g.body), 3) << to_string(g);
  EXPECT_EQ(count_symbolic_unrolled(g.body), 1) << to_string(g);  // the fallback
  EXPECT_EQ(unrolled_extents(g.body), (std::vector<int64_t>{1, 2, 3})) << to_string(g);
  expect_equivalent_1d(f, g, 1, {0, 1, 2, 3, 4, 10});
}

TEST(TirSpecializeExtents, MaxCopiesCapsTheCodeSize) {
  PrimFunc f = simplify(loop_partition(simplify(add_split(8, ForKind::kUnrolled))));
  // Seven remainders do not fit in four copies (or one): the function is left alone.
  for (int64_t cap : {0, 1, 4, 6}) {
    PrimFunc g = specialize_extents(f, cap);
    EXPECT_EQ(g.body.get(), f.body.get()) << "cap " << cap << "\n" << to_string(g);
  }
  EXPECT_NE(specialize_extents(f, 7).body.get(), f.body.get());
  // Two remainders (rows and columns of a 3x3 tile, 1 or 2 each): where both are partial
  // their dispatches nest, so their copies multiply and a cap of 3 stops the inner one.
  Var m("m"), n("n"), io("io"), jo("jo"), i("i"), j("j");
  auto A = buf("A", {m, n}), C = buf("C", {m, n});
  arith::Expr row = io * 3 + i, col = jo * 3 + j;
  Stmt body = make_for(
      io, 0, arith::floordiv(m + 2, 3), ForKind::kSerial,
      make_for(jo, 0, arith::floordiv(n + 2, 3), ForKind::kSerial,
               make_for(i, 0, 3, ForKind::kUnrolled,
                        make_for(j, 0, 3, ForKind::kUnrolled,
                                 make_if(arith::logical_and(arith::lt(row, m), arith::lt(col, n)),
                                         make_store(C, {row, col}, load(A, {row, col})))))));
  PrimFunc two{"two_remainders", {A, C}, 1, body};
  PrimFunc uncapped = partition_and_specialize(two, 8);
  PrimFunc capped = partition_and_specialize(two, 3);
  PrimFunc none = partition_and_specialize(two, 0);
  EXPECT_EQ(count_symbolic_unrolled(uncapped.body), 0) << to_string(uncapped);
  EXPECT_EQ(count_symbolic_unrolled(capped.body), 2) << to_string(capped);
  EXPECT_EQ(count_symbolic_unrolled(none.body), 4) << to_string(none);
  for (int64_t mv : {1, 2, 3, 4, 5, 7}) {
    for (int64_t nv : {1, 2, 3, 5, 6, 8}) {
      std::string what = "m=" + std::to_string(mv) + " n=" + std::to_string(nv);
      for (const PrimFunc* g : {&uncapped, &capped, &none}) {
        expect_equivalent(two, *g, {random_tensor({mv, nv})}, what);
      }
    }
  }
}

TEST(TirSpecializeExtents, LeavesLoopsItCannotBoundOrWasNotAskedToUnroll) {
  Var n("n"), i("i"), io("io"), ii("ii");
  auto A = buf("A", {n}), C = buf("C", {n});
  // Unbounded: for (i, 0, n) unrolled.
  PrimFunc unbounded{"unbounded",
                     {A, C},
                     1,
                     make_for(i, 0, n, ForKind::kUnrolled, make_store(C, {i}, load(A, {i})))};
  EXPECT_EQ(specialize_extents(unbounded, 8).body.get(), unbounded.body.get());
  // A serial remainder: only loops the schedule asked to unroll are copied.
  PrimFunc serial = simplify(loop_partition(simplify(add_split(8, ForKind::kSerial))));
  EXPECT_EQ(specialize_extents(serial, 8).body.get(), serial.body.get()) << to_string(serial);
}

}  // namespace
}  // namespace dynvm::tir::test
