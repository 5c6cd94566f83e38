// Element-wise TE programs lowered with various schedules and run on the reference TIR
// evaluator: broadcasting, inlined and materialized chains, transpose, gather through
// let_index, fuse + parallel, and a padding stage computed at its consumer's loop.
#include <gtest/gtest.h>

#include "tests/kernels/te/te_test_util.h"

namespace dynvm::te {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

const std::vector<std::pair<int64_t, int64_t>> kSizes2d = {
    {1, 1}, {3, 7}, {17, 129}, {1000, 3}, {7, 1}};
const std::vector<int64_t> kSizes1d = {1, 3, 7, 17, 129, 1000};

tir::Expr f32c(double v) { return tir::make_const(tir::f32(), v); }

TEST(LowerElementwise, BroadcastAddOverSymbolicDims) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto B = placeholder("B", {1, n}, kF32);  // broadcast along rows
  auto C = compute("C", {m, n}, [&](const Indices& i) {
    return read(A, {i[0], i[1]}) + read(B, {0, i[1]});
  });
  Schedule s = create_schedule({C});
  tir::PrimFunc f = lower_checked(s, {A, B, C}, "broadcast_add");
  std::mt19937 rng(1);
  for (auto [rows, cols] : kSizes2d) {
    vm::Tensor a = random_f32({rows, cols}, rng), b = random_f32({1, cols}, rng);
    vm::Tensor c = poisoned({rows, cols}, kF32);
    run(f, {a, b, c});
    std::vector<double> want;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) want.push_back(at(a, i * cols + j) + at(b, j));
    }
    expect_values(c, want, 1e-6, "broadcast " + shape_name({rows, cols}));
  }
}

TEST(LowerElementwise, StaticShapeSplitVectorizeHasNoGuard) {
  auto A = placeholder("A", {3, 64}, kF32);
  auto C = compute("C", {3, 64}, [&](const Indices& i) {
    return read(A, {i[0], i[1]}) * f32c(2.0) + f32c(1.0);
  });
  Schedule s = create_schedule({C});
  auto [jo, ji] = s[C].split(s[C].axis(1), 16);
  s[C].vectorize(ji);
  s[C].unroll(jo);
  tir::PrimFunc f = lower_checked(s, {A, C}, "scale");
  EXPECT_TRUE(stmts_of(f, tir::StmtKind::kIf).empty()) << tir::to_string(f);
  std::vector<tir::ForKind> kinds;
  for (const tir::Stmt& loop : stmts_of(f, tir::StmtKind::kFor)) kinds.push_back(loop->for_kind);
  EXPECT_EQ(kinds, (std::vector<tir::ForKind>{tir::ForKind::kSerial, tir::ForKind::kUnrolled,
                                              tir::ForKind::kVectorized}));
  std::mt19937 rng(2);
  vm::Tensor a = random_f32({3, 64}, rng), c = poisoned({3, 64}, kF32);
  run(f, {a, c});
  std::vector<double> want;
  for (int64_t i = 0; i < 3 * 64; ++i) want.push_back(static_cast<float>(at(a, i) * 2) + 1);
  expect_values(c, want, 1e-6, "scale");
}

// B = A * 2, C = exp(B) - A, D = C + B: with B and C inlined, one nest writes D.
TEST(LowerElementwise, InlinedChainIsOneLoopNest) {
  arith::Var n("n");
  auto A = placeholder("A", {n}, kF32);
  auto B = compute("B", {n}, [&](const Indices& i) { return read(A, {i[0]}) * f32c(2.0); });
  auto C = compute("C", {n}, [&](const Indices& i) {
    return tir::call(tir::Intrinsic::kExp, read(B, {i[0]})) - read(A, {i[0]});
  });
  auto D = compute("D", {n}, [&](const Indices& i) { return read(C, {i[0]}) + read(B, {i[0]}); });
  Schedule s = create_schedule({D});
  s[B].compute_inline();
  s[C].compute_inline();
  auto [io, ii] = s[D].split(s[D].axis(0), 8);
  tir::PrimFunc f = lower_checked(s, {A, D}, "chain");
  EXPECT_TRUE(stmts_of(f, tir::StmtKind::kAllocate).empty()) << tir::to_string(f);
  EXPECT_EQ(stmts_of(f, tir::StmtKind::kFor).size(), 2u);
  EXPECT_EQ(stmts_of(f, tir::StmtKind::kStore).size(), 1u);
  std::mt19937 rng(3);
  for (int64_t len : kSizes1d) {
    vm::Tensor a = random_f32({len}, rng), d = poisoned({len}, kF32);
    run(f, {a, d});
    std::vector<double> want;
    for (int64_t i = 0; i < len; ++i) {
      double x = at(a, i);
      want.push_back(std::exp(2 * x) - x + 2 * x);
    }
    expect_values(d, want, 1e-5, "chain n=" + std::to_string(len));
  }
}

// The same chain without inlining: intermediates get workspace buffers (symbolic size).
TEST(LowerElementwise, MaterializedChainUsesWorkspaceBuffers) {
  arith::Var n("n");
  auto A = placeholder("A", {n}, kF32);
  auto B = compute("B", {n}, [&](const Indices& i) { return read(A, {i[0]}) * f32c(2.0); });
  auto C = compute("C", {n}, [&](const Indices& i) { return read(B, {i[0]}) + read(A, {i[0]}); });
  Schedule s = create_schedule({C});
  tir::PrimFunc f = lower_checked(s, {A, C}, "chain2");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->name(), "B");
  EXPECT_EQ(allocs[0]->buffer->scope(), tir::BufferScope::kWorkspace);
  std::mt19937 rng(4);
  for (int64_t len : kSizes1d) {
    vm::Tensor a = random_f32({len}, rng), c = poisoned({len}, kF32);
    run(f, {a, c});
    std::vector<double> want;
    for (int64_t i = 0; i < len; ++i) want.push_back(3 * at(a, i));
    expect_values(c, want, 1e-6, "chain2 n=" + std::to_string(len));
  }
}

TEST(LowerElementwise, TiledTransposeMatchesLoops) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto T = compute("T", {n, m}, [&](const Indices& i) { return read(A, {i[1], i[0]}); });
  Schedule s = create_schedule({T});
  s[T].tile(s[T].axis(0), s[T].axis(1), 8, 4);
  tir::PrimFunc f = lower_checked(s, {A, T}, "transpose");
  std::mt19937 rng(5);
  for (auto [rows, cols] : kSizes2d) {
    vm::Tensor a = random_f32({rows, cols}, rng), t = poisoned({cols, rows}, kF32);
    run(f, {a, t});
    std::vector<double> want;
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t i = 0; i < rows; ++i) want.push_back(at(a, i * cols + j));
    }
    expect_values(t, want, 0, "transpose " + shape_name({rows, cols}));
  }
}

// out[i, j] = table[idx[i], j]: the row index is data, bound by let_index.
TEST(LowerElementwise, GatherThroughLetIndex) {
  arith::Var rows("rows"), cols("cols"), n("n");
  auto table = placeholder("table", {rows, cols}, kF32);
  auto idx = placeholder("idx", {n}, kI64);
  auto out = compute("out", {n, cols}, [&](const Indices& i) {
    arith::Var r("r");
    return tir::let_index(r, read(idx, {i[0]}), read(table, {r, i[1]}));
  });
  Schedule s = create_schedule({out});
  auto [jo, ji] = s[out].split(s[out].axis(1), 4);
  tir::PrimFunc f = lower_checked(s, {table, idx, out}, "gather");
  std::mt19937 rng(6);
  for (auto [num_rows, num_cols] : kSizes2d) {
    for (int64_t len : {1, 7, 17}) {
      vm::Tensor t = random_f32({num_rows, num_cols}, rng);
      vm::Tensor ix = random_ints({len}, rng, 0, num_rows - 1, kI64);
      vm::Tensor o = poisoned({len, num_cols}, kF32);
      run(f, {t, ix, o});
      std::vector<double> want;
      for (int64_t i = 0; i < len; ++i) {
        int64_t r = static_cast<int64_t>(at(ix, i));
        for (int64_t j = 0; j < num_cols; ++j) want.push_back(at(t, r * num_cols + j));
      }
      expect_values(o, want, 0, "gather " + shape_name({num_rows, num_cols, len}));
    }
  }
}

TEST(LowerElementwise, FusedParallelLoopCoversEveryElement) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto B = placeholder("B", {m, n}, kF32);
  auto C = compute("C", {m, n}, [&](const Indices& i) {
    return read(A, {i[0], i[1]}) * read(B, {i[0], i[1]});
  });
  Schedule s = create_schedule({C});
  IterVarRef fused = s[C].fuse(s[C].axis(0), s[C].axis(1));
  auto [fo, fi] = s[C].split(fused, 16);
  s[C].parallel(fo);
  tir::PrimFunc f = lower_checked(s, {A, B, C}, "fused");
  auto loops = stmts_of(f, tir::StmtKind::kFor);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[0]->for_kind, tir::ForKind::kParallel);
  std::mt19937 rng(7);
  for (auto [rows, cols] : kSizes2d) {
    vm::Tensor a = random_f32({rows, cols}, rng), b = random_f32({rows, cols}, rng);
    vm::Tensor c = poisoned({rows, cols}, kF32);
    run(f, {a, b, c});
    std::vector<double> want;
    for (int64_t i = 0; i < rows * cols; ++i) want.push_back(at(a, i) * at(b, i));
    expect_values(c, want, 1e-6, "fused " + shape_name({rows, cols}));
  }
}

// P = A zero-padded by one on each side (n + 2), C[i] = P[i] + P[i+1] + P[i+2]; P computed
// per 4-element block of C: a 6-element local window.
TEST(LowerElementwise, PaddingComputedAtConsumerLoop) {
  arith::Var n("n");
  auto A = placeholder("A", {n}, kF32);
  auto P = compute("P", {n + 2}, [&](const Indices& i) {
    tir::Expr x = tir::index_value(i[0]);
    tir::Expr inside = tir::logical_and(tir::compare(tir::CompareOp::kGe, x, tir::index_value(1)),
                                        tir::compare(tir::CompareOp::kLe, x, tir::index_value(n)));
    // The clamp keeps the unselected load in bounds: select evaluates both sides.
    return tir::select(inside, read(A, {arith::min(arith::max(i[0] - 1, 0), n - 1)}), f32c(0));
  });
  auto C = compute("C", {n}, [&](const Indices& i) {
    return read(P, {i[0]}) + read(P, {i[0] + 1}) + read(P, {i[0] + 2});
  });
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 4);
  s[P].compute_at(s[C], io);
  tir::PrimFunc f = lower_checked(s, {A, C}, "pad");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 1u) << tir::to_string(f);
  EXPECT_EQ(allocs[0]->buffer->scope(), tir::BufferScope::kLocal);
  ASSERT_EQ(allocs[0]->buffer->shape().size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->shape()[0].int_value(), 6);
  std::mt19937 rng(8);
  for (int64_t len : kSizes1d) {
    vm::Tensor a = random_f32({len}, rng), c = poisoned({len}, kF32);
    run(f, {a, c});
    std::vector<double> want;
    for (int64_t i = 0; i < len; ++i) {
      double left = i >= 1 ? at(a, i - 1) : 0, right = i + 1 < len ? at(a, i + 1) : 0;
      want.push_back(left + at(a, i) + right);
    }
    expect_values(c, want, 1e-6, "pad n=" + std::to_string(len));
  }
}

// compute_at of an element-wise producer at the outer loop of a non-dividing split: the
// producer's block is a constant 8 elements, guarded at the tail like its consumer.
TEST(LowerElementwise, ElementwiseProducerAtNonDividingSplit) {
  arith::Var n("n");
  auto A = placeholder("A", {n}, kF32);
  auto B = compute("B", {n}, [&](const Indices& i) { return read(A, {i[0]}) + f32c(1); });
  auto C = compute("C", {n}, [&](const Indices& i) { return read(B, {i[0]}) * f32c(3); });
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 8);
  s[B].compute_at(s[C], io);
  s[B].vectorize(s[B].axis(0));
  tir::PrimFunc f = lower_checked(s, {A, C}, "blocked");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->scope(), tir::BufferScope::kLocal);
  EXPECT_EQ(allocs[0]->buffer->shape()[0].int_value(), 8);
  std::mt19937 rng(9);
  for (int64_t len : kSizes1d) {
    vm::Tensor a = random_f32({len}, rng), c = poisoned({len}, kF32);
    run(f, {a, c});
    std::vector<double> want;
    for (int64_t i = 0; i < len; ++i) want.push_back(static_cast<float>(at(a, i) + 1) * 3.0);
    expect_values(c, want, 1e-6, "blocked n=" + std::to_string(len));
  }
}

}  // namespace
}  // namespace dynvm::te
