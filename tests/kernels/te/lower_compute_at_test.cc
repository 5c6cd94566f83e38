// compute_at and bound inference beyond the simple cases: a 2-D padded stencil computed
// per output tile, nested attachments, a stage attached inside a reduce loop, and programs
// with several outputs or a rank-0 output.
#include <gtest/gtest.h>

#include "tests/kernels/te/te_test_util.h"

namespace dynvm::te {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

tir::Expr f32c(double v) { return tir::make_const(tir::f32(), v); }

// P = A zero-padded by one on every side; C[i, j] = sum of the 3x3 window of P at (i, j),
// written as a reduction over (ry, rx). P is computed per 4x8 tile of C: a 6x10 window.
TEST(LowerComputeAt, PaddedBoxFilterPerTile) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto P = compute("P", {m + 2, n + 2}, [&](const Indices& i) {
    auto in = [&](const arith::Var& v, const arith::Var& extent) {
      tir::Expr x = tir::index_value(v);
      return tir::logical_and(tir::compare(tir::CompareOp::kGe, x, tir::index_value(1)),
                              tir::compare(tir::CompareOp::kLe, x, tir::index_value(extent)));
    };
    arith::Expr y = arith::min(arith::max(i[0] - 1, 0), m - 1);
    arith::Expr x = arith::min(arith::max(i[1] - 1, 0), n - 1);
    return tir::select(tir::logical_and(in(i[0], m), in(i[1], n)), read(A, {y, x}), f32c(0));
  });
  auto ry = reduce_axis(3, "ry");
  auto rx = reduce_axis(3, "rx");
  auto C = compute("C", {m, n}, [&](const Indices& i) {
    return sum(read(P, {i[0] + ry.var, i[1] + rx.var}), {ry, rx});
  });
  Schedule s = create_schedule({C});
  auto [xo, yo, xi, yi] = s[C].tile(s[C].axis(0), s[C].axis(1), 4, 8);
  s[P].compute_at(s[C], yo);
  tir::PrimFunc f = lower_checked(s, {A, C}, "box3x3");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 1u) << tir::to_string(f);
  const tir::Buffer& window = *allocs[0]->buffer;
  EXPECT_EQ(window.scope(), tir::BufferScope::kLocal);
  ASSERT_EQ(window.shape().size(), 2u);
  EXPECT_EQ(window.shape()[0].int_value(), 6);
  EXPECT_EQ(window.shape()[1].int_value(), 10);
  std::mt19937 rng(31);
  for (auto [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 9}, {5, 129}}) {
    vm::Tensor a = random_f32({rows, cols}, rng), c = poisoned({rows, cols}, kF32);
    run(f, {a, c});
    std::vector<double> want;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        double acc = 0;
        for (int64_t y = i - 1; y <= i + 1; ++y) {
          for (int64_t x = j - 1; x <= j + 1; ++x) {
            if (y >= 0 && y < rows && x >= 0 && x < cols) acc += at(a, y * cols + x);
          }
        }
        want.push_back(acc);
      }
    }
    expect_values(c, want, 1e-5, "box3x3 " + shape_name({rows, cols}));
  }
}

// B at C's outer loop, C at D's outer loop: B's region follows C's, which follows D's.
TEST(LowerComputeAt, NestedAttachments) {
  arith::Var n("n");
  auto A = placeholder("A", {n + 2}, kF32);
  auto B = compute("B", {n + 2}, [&](const Indices& i) { return read(A, {i[0]}) * f32c(2); });
  auto C = compute("C", {n + 1},
                   [&](const Indices& i) { return read(B, {i[0]}) + read(B, {i[0] + 1}); });
  auto N = placeholder("N", {n}, kF32);
  auto D = compute("D", {n}, [&](const Indices& i) {
    return read(C, {i[0]}) - read(C, {i[0] + 1}) + read(N, {i[0]});
  });
  Schedule s = create_schedule({D});
  auto [d_o, d_i] = s[D].split(s[D].axis(0), 8);
  s[C].compute_at(s[D], d_o);
  auto [c_o, c_i] = s[C].split(s[C].axis(0), 3);
  s[B].compute_at(s[C], c_o);
  // The 2+n sized input needs n bound from some parameter: N's shape is exactly n.
  tir::PrimFunc f = lower_checked(s, {N, A, D}, "nested");
  std::mt19937 rng(32);
  for (int64_t len : {1, 3, 7, 17, 129}) {
    vm::Tensor nn = random_f32({len}, rng), a = random_f32({len + 2}, rng);
    vm::Tensor d = poisoned({len}, kF32);
    run(f, {nn, a, d});
    std::vector<double> want;
    for (int64_t i = 0; i < len; ++i) {
      double c0 = 2 * at(a, i) + 2 * at(a, i + 1), c1 = 2 * at(a, i + 1) + 2 * at(a, i + 2);
      want.push_back(c0 - c1 + at(nn, i));
    }
    expect_values(d, want, 1e-5, "nested n=" + std::to_string(len));
  }
}

// A scaled copy of B's rows computed inside C's reduce loop (a cache_read-like packing):
// the region is 4 rows of all N columns, a workspace since N is symbolic.
TEST(LowerComputeAt, ProducerInsideReduceLoop) {
  arith::Var M("M"), N("N"), K("K");
  auto A = placeholder("A", {M, K}, kF32);
  auto B = placeholder("B", {K, N}, kF32);
  auto BP = compute("BP", {K, N}, [&](const Indices& i) {
    return read(B, {i[0], i[1]}) * f32c(0.5);
  });
  auto k = reduce_axis(K, "k");
  auto C = compute("C", {M, N}, [&](const Indices& i) {
    return sum(read(A, {i[0], k.var}) * read(BP, {k.var, i[1]}), {k});
  });
  Schedule s = create_schedule({C});
  auto [ko, ki] = s[C].split(s[C].reduce_axis(0), 4);
  s[C].reorder({s[C].axis(0), ko, s[C].axis(1), ki});
  s[BP].compute_at(s[C], ko);
  tir::PrimFunc f = lower_checked(s, {A, B, C}, "packed");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 1u) << tir::to_string(f);
  EXPECT_EQ(allocs[0]->buffer->shape()[0].int_value(), 4);
  std::mt19937 rng(33);
  for (auto [m, n, kk] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {3, 7, 17}, {5, 3, 4}}) {
    vm::Tensor a = random_f32({m, kk}, rng), b = random_f32({kk, n}, rng);
    vm::Tensor c = poisoned({m, n}, kF32);
    run(f, {a, b, c});
    std::vector<double> want;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < kk; ++q) acc += at(a, i * kk + q) * 0.5 * at(b, q * n + j);
        want.push_back(acc);
      }
    }
    expect_values(c, want, 1e-5, "packed " + shape_name({m, n, kk}));
  }
}

// A producer computed at the outer half of a fused-then-split loop: the rows its block
// touches follow from floordiv of the fused range, the columns are all of them.
TEST(LowerComputeAt, ProducerAtFusedLoop) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto B = compute("B", {m, n}, [&](const Indices& i) { return read(A, {i[0], i[1]}) + f32c(1); });
  auto C = compute("C", {m, n}, [&](const Indices& i) { return read(B, {i[0], i[1]}) * f32c(2); });
  Schedule s = create_schedule({C});
  IterVarRef fused = s[C].fuse(s[C].axis(0), s[C].axis(1));
  auto [fo, fi] = s[C].split(fused, 8);
  s[B].compute_at(s[C], fo);
  tir::PrimFunc f = lower_checked(s, {A, C}, "fused_at");
  std::mt19937 rng(36);
  for (auto [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 3}, {2, 129}, {9, 1}}) {
    vm::Tensor a = random_f32({rows, cols}, rng), c = poisoned({rows, cols}, kF32);
    run(f, {a, c});
    std::vector<double> want;
    for (int64_t i = 0; i < rows * cols; ++i) want.push_back(static_cast<float>(at(a, i) + 1) * 2);
    expect_values(c, want, 1e-6, "fused_at " + shape_name({rows, cols}));
  }
}

// B = A * 2 is read by both outputs, so it is materialized once at the top level.
TEST(LowerComputeAt, TwoOutputsShareAnIntermediate) {
  arith::Var n("n");
  auto A = placeholder("A", {n}, kF32);
  auto B = compute("B", {n}, [&](const Indices& i) { return read(A, {i[0]}) * f32c(2); });
  auto C = compute("C", {n}, [&](const Indices& i) { return read(B, {i[0]}) + f32c(1); });
  auto D = compute("D", {n}, [&](const Indices& i) { return read(B, {i[0]}) * read(B, {i[0]}); });
  Schedule s = create_schedule({C, D});
  s[D].split(s[D].axis(0), 4);
  tir::PrimFunc f = lower_checked(s, {A, C, D}, "two_outputs");
  EXPECT_EQ(stmts_of(f, tir::StmtKind::kAllocate).size(), 1u);
  std::mt19937 rng(34);
  for (int64_t len : {1, 7, 1000}) {
    vm::Tensor a = random_f32({len}, rng), c = poisoned({len}, kF32), d = poisoned({len}, kF32);
    run(f, {a, c, d});
    std::vector<double> want_c, want_d;
    for (int64_t i = 0; i < len; ++i) {
      want_c.push_back(2 * at(a, i) + 1);
      want_d.push_back(4 * at(a, i) * at(a, i));
    }
    expect_values(c, want_c, 1e-6, "C n=" + std::to_string(len));
    expect_values(d, want_d, 1e-6, "D n=" + std::to_string(len));
  }
}

// A row max read by the row sum and by the output, all three inside the output's row loop:
// the max is computed first at that loop, over the columns both of its readers need.
TEST(LowerComputeAt, SiblingReadersAtOneLoop) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto M = compute("M", {m, 1}, [&](const Indices& i) {
    auto r = reduce_axis(n, "r");
    return max_reduce(read(A, {i[0], r.var}), {r});
  });
  auto S = compute("S", {m, 1}, [&](const Indices& i) {
    auto r = reduce_axis(n, "r");
    return sum(read(A, {i[0], r.var}) - read(M, {i[0], arith::Expr(0)}), {r});
  });
  auto Y = compute("Y", {m, n}, [&](const Indices& i) {
    return (read(A, {i[0], i[1]}) - read(M, {i[0], arith::Expr(0)})) /
           (read(S, {i[0], arith::Expr(0)}) - f32c(1));
  });
  Schedule s = create_schedule({Y});
  s[M].compute_at(s[Y], s[Y].axis(0));
  s[S].compute_at(s[Y], s[Y].axis(0));
  s[Y].vectorize(s[Y].axis(1));
  tir::PrimFunc f = lower_checked(s, {A, Y}, "row_local");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 2u) << tir::to_string(f);
  for (const tir::Stmt& a : allocs) {  // one row's value each, not a column of m
    EXPECT_EQ(a->buffer->scope(), tir::BufferScope::kLocal) << tir::to_string(f);
  }
  std::mt19937 rng(36);
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {5, 40}}) {
    vm::Tensor a = random_f32({rows, cols}, rng), y = poisoned({rows, cols}, kF32);
    run(f, {a, y});
    std::vector<double> want;
    for (int64_t i = 0; i < rows; ++i) {
      double mx = -INFINITY, sm = 0;
      for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, at(a, i * cols + j));
      for (int64_t j = 0; j < cols; ++j) sm += at(a, i * cols + j) - mx;
      for (int64_t j = 0; j < cols; ++j) want.push_back((at(a, i * cols + j) - mx) / (sm - 1));
    }
    expect_values(y, want, 1e-4, "row_local " + shape_name({rows, cols}));
  }
}

// Y[y, x] reads P at the flat index y*w + x; Y's (y, x) fused and split by 16, P computed
// at the outer loop: P's region is that tile's 16 positions (the index, written in the loop
// variables, is f.outer*16 + f.inner), not the whole rows the tile touches.
TEST(LowerComputeAt, FlatIndexOfFusedAxesKeepsTheTile) {
  arith::Var h("h"), w("w");
  auto A = placeholder("A", {h * w}, kF32);
  auto P = compute("P", {h * w}, [&](const Indices& i) { return read(A, {i[0]}) * f32c(2); });
  auto Y = compute("Y", {h, w}, [&](const Indices& i) {
    return read(P, {arith::Expr(i[0]) * w + i[1]}) + f32c(1);
  });
  Schedule s = create_schedule({Y});
  IterVarRef f = s[Y].fuse(s[Y].axis(0), s[Y].axis(1));
  auto [fo, fi] = s[Y].split(f, 16);
  s[P].compute_at(s[Y], fo);
  s[Y].vectorize(fi);
  tir::PrimFunc func = lower_checked(s, {A, Y}, "flat_tile");
  auto allocs = stmts_of(func, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 1u) << tir::to_string(func);
  EXPECT_EQ(allocs[0]->buffer->scope(), tir::BufferScope::kLocal) << tir::to_string(func);
  ASSERT_TRUE(allocs[0]->buffer->shape()[0].is_int_imm()) << tir::to_string(func);
  EXPECT_EQ(allocs[0]->buffer->shape()[0].int_value(), 16);
  std::mt19937 rng(37);
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {5, 40}}) {
    vm::Tensor a = random_f32({rows * cols}, rng), y = poisoned({rows, cols}, kF32);
    run(func, {a, y});
    std::vector<double> want;
    for (int64_t i = 0; i < rows * cols; ++i) want.push_back(2 * at(a, i) + 1);
    expect_values(y, want, 1e-6, "flat_tile " + shape_name({rows, cols}));
  }
}

// P computed at Y's outer loop and read only by C, computed at a loop inside it: P covers
// what C reads over every iteration of the loops between (a depthwise conv's padded rows,
// read by each column tile's accumulator): 8 + 1 elements per outer iteration.
TEST(LowerComputeAt, ReaderAtAnInnerLoopOfTheSameConsumer) {
  arith::Var n("n");
  auto A = placeholder("A", {n + 1}, kF32);
  auto P = compute("P", {n + 1}, [&](const Indices& i) { return read(A, {i[0]}) * f32c(2); });
  auto C = compute("C", {n}, [&](const Indices& i) {
    return read(P, {i[0]}) + read(P, {arith::Expr(i[0]) + 1});
  });
  auto Y = compute("Y", {n}, [&](const Indices& i) { return read(C, {i[0]}) * f32c(3); });
  Schedule s = create_schedule({Y});
  auto [io, ii] = s[Y].split(s[Y].axis(0), 8);
  auto [iio, iii] = s[Y].split(ii, 4);
  s[C].compute_at(s[Y], iio);
  s[P].compute_at(s[Y], io);
  tir::PrimFunc f = lower_checked(s, {A, Y}, "inner_reader");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 2u) << tir::to_string(f);
  const tir::Buffer& p = allocs[0]->buffer->name() == "P" ? *allocs[0]->buffer : *allocs[1]->buffer;
  ASSERT_TRUE(p.shape()[0].is_int_imm()) << tir::to_string(f);
  EXPECT_EQ(p.shape()[0].int_value(), 9);
  std::mt19937 rng(38);
  for (int64_t len : {1, 7, 8, 29}) {
    vm::Tensor a = random_f32({len + 1}, rng), y = poisoned({len}, kF32);
    run(f, {a, y});
    std::vector<double> want;
    for (int64_t i = 0; i < len; ++i) want.push_back(3 * (2 * at(a, i) + 2 * at(a, i + 1)));
    expect_values(y, want, 1e-5, "inner_reader n=" + std::to_string(len));
  }
}

// A rank-0 output: the sum of every element, with both reduce axes fused and split.
TEST(LowerComputeAt, ScalarOutputOfFusedReduction) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto r0 = reduce_axis(m, "r0");
  auto r1 = reduce_axis(n, "r1");
  auto T = compute("T", {}, [&](const Indices&) {
    return sum(read(A, {r0.var, r1.var}), {r0, r1});
  });
  Schedule s = create_schedule({T});
  IterVarRef fused = s[T].fuse(s[T].reduce_axis(0), s[T].reduce_axis(1));
  s[T].split(fused, 16);
  tir::PrimFunc f = lower_checked(s, {A, T}, "total");
  std::mt19937 rng(35);
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 129}}) {
    vm::Tensor a = random_f32({rows, cols}, rng), t = poisoned({}, kF32);
    run(f, {a, t});
    double acc = 0;
    for (int64_t i = 0; i < rows * cols; ++i) acc += at(a, i);
    expect_values(t, {acc}, 1e-5, "total " + shape_name({rows, cols}));
  }
}

// V read only by Pr, computed at M's outer loop, M at Y's outer loop, V at that loop too
// (Winograd's V, product and M per chunk of tiles): V covers what Pr reads over every loop
// of M, the chunk's 8 positions, not the whole vector.
TEST(LowerComputeAt, ReaderInsideAStageComputedAtTheLoop) {
  arith::Var n("n");
  auto A = placeholder("A", {n}, kF32);
  auto V = compute("V", {n}, [&](const Indices& i) { return read(A, {i[0]}) * f32c(2); });
  auto Pr = compute("Pr", {n}, [&](const Indices& i) { return read(V, {i[0]}) + f32c(1); });
  auto M = compute("M", {n}, [&](const Indices& i) { return read(Pr, {i[0]}); });
  auto Y = compute("Y", {n}, [&](const Indices& i) { return read(M, {i[0]}) * f32c(3); });
  Schedule s = create_schedule({Y});
  auto [yo, yi] = s[Y].split(s[Y].axis(0), 8);
  s[M].compute_at(s[Y], yo);
  auto [mo, mi] = s[M].split(s[M].axis(0), 4);
  s[Pr].compute_at(s[M], mo);
  s[V].compute_at(s[Y], yo);
  tir::PrimFunc f = lower_checked(s, {A, Y}, "nested_reader");
  for (const tir::Stmt& a : stmts_of(f, tir::StmtKind::kAllocate)) {
    if (a->buffer->name() != "V") continue;
    ASSERT_TRUE(a->buffer->shape()[0].is_int_imm()) << tir::to_string(f);
    EXPECT_EQ(a->buffer->shape()[0].int_value(), 8) << tir::to_string(f);
  }
  std::mt19937 rng(38);
  for (int64_t len : {1, 8, 13, 40}) {
    vm::Tensor a = random_f32({len}, rng), y = poisoned({len}, kF32);
    run(f, {a, y});
    std::vector<double> want;
    for (int64_t i = 0; i < len; ++i) want.push_back((2 * at(a, i) + 1) * 3);
    expect_values(y, want, 1e-6, "nested_reader n=" + std::to_string(len));
  }
}

}  // namespace
}  // namespace dynvm::te
