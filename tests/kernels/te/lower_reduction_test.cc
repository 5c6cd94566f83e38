// Reductions lowered and run on the reference TIR evaluator: row sum / max / argmax /
// argmin (ties keep the first index, or the last for argmax_last / argmin_last), reductions
// over several axes, a reduce loop outside a data-parallel loop (the init nest), and matmul
// with split + reorder + tile and with cache_write + compute_at register blocking.
#include <gtest/gtest.h>

#include <limits>

#include "tests/kernels/te/te_test_util.h"

namespace dynvm::te {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

const std::vector<std::pair<int64_t, int64_t>> kSizes2d = {{1, 1},    {3, 7}, {17, 129},
                                                           {2, 1000}, {7, 1}, {1, 17}};

struct RowReduce {
  std::function<tir::Expr(tir::Expr, std::vector<IterVar>)> build;
  std::function<double(const std::vector<double>&)> reference;
  vm::DType out_dtype;
};

void check_row_reduce(const RowReduce& op, const std::string& name, bool split_reduce,
                      bool integer_inputs) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto r = reduce_axis(n, "r");
  auto C = compute("C", {m}, [&](const Indices& i) {
    return op.build(read(A, {i[0], r.var}), {r});
  });
  Schedule s = create_schedule({C});
  if (split_reduce) {
    auto [ro, ri] = s[C].split(s[C].reduce_axis(0), 4);
    s[C].unroll(ri);
  }
  tir::PrimFunc f = lower_checked(s, {A, C}, name);
  std::mt19937 rng(11);
  for (auto [rows, cols] : kSizes2d) {
    vm::Tensor a = integer_inputs ? random_ints({rows, cols}, rng, -2, 2, kF32)
                                  : random_f32({rows, cols}, rng);
    vm::Tensor c = poisoned({rows}, op.out_dtype);
    run(f, {a, c});
    std::vector<double> want;
    for (int64_t i = 0; i < rows; ++i) {
      std::vector<double> row;
      for (int64_t j = 0; j < cols; ++j) row.push_back(at(a, i * cols + j));
      want.push_back(op.reference(row));
    }
    expect_values(c, want, 1e-5, name + " " + shape_name({rows, cols}));
  }
}

double first_extreme(const std::vector<double>& row, bool max) {
  size_t best = 0;
  for (size_t j = 1; j < row.size(); ++j) {
    if (max ? row[j] > row[best] : row[j] < row[best]) best = j;
  }
  return static_cast<double>(best);
}

double last_extreme(const std::vector<double>& row, bool max) {
  size_t best = row.size() - 1;
  for (size_t j = best; j-- > 0;) {
    if (max ? row[j] > row[best] : row[j] < row[best]) best = j;
  }
  return static_cast<double>(best);
}

const RowReduce kSum{sum,
                     [](const std::vector<double>& row) {
                       double acc = 0;
                       for (double v : row) acc += v;
                       return acc;
                     },
                     kF32};
const RowReduce kMax{max_reduce,
                     [](const std::vector<double>& row) {
                       double acc = -std::numeric_limits<double>::infinity();
                       for (double v : row) acc = std::max(acc, v);
                       return acc;
                     },
                     kF32};
const RowReduce kMin{min_reduce,
                     [](const std::vector<double>& row) {
                       double acc = std::numeric_limits<double>::infinity();
                       for (double v : row) acc = std::min(acc, v);
                       return acc;
                     },
                     kF32};
const RowReduce kArgMax{argmax, [](const std::vector<double>& r) { return first_extreme(r, true); },
                        kI64};
const RowReduce kArgMin{argmin,
                        [](const std::vector<double>& r) { return first_extreme(r, false); }, kI64};

const RowReduce kArgMaxLast{
    argmax_last, [](const std::vector<double>& r) { return last_extreme(r, true); }, kI64};
const RowReduce kArgMinLast{
    argmin_last, [](const std::vector<double>& r) { return last_extreme(r, false); }, kI64};

TEST(LowerReduction, RowSum) { check_row_reduce(kSum, "row_sum", false, false); }
TEST(LowerReduction, RowSumSplitReduceAxis) { check_row_reduce(kSum, "row_sum4", true, false); }
TEST(LowerReduction, RowMax) { check_row_reduce(kMax, "row_max", true, false); }
TEST(LowerReduction, RowMin) { check_row_reduce(kMin, "row_min", false, false); }
// Inputs from {-2..2}: ties are everywhere, and the first extreme must win.
TEST(LowerReduction, ArgMaxKeepsFirstOfTies) { check_row_reduce(kArgMax, "argmax", true, true); }
TEST(LowerReduction, ArgMinKeepsFirstOfTies) { check_row_reduce(kArgMin, "argmin", false, true); }
TEST(LowerReduction, ArgMaxLastKeepsLastOfTies) {
  check_row_reduce(kArgMaxLast, "argmax_last", true, true);
}
TEST(LowerReduction, ArgMinLastKeepsLastOfTies) {
  check_row_reduce(kArgMinLast, "argmin_last", false, true);
}

TEST(LowerReduction, RowProd) {
  RowReduce prod_op{prod,
                    [](const std::vector<double>& row) {
                      double acc = 1;
                      for (double v : row) acc *= v;
                      return acc;
                    },
                    kF32};
  check_row_reduce(prod_op, "row_prod", true, false);
}

// Sum and argmax over both axes of a matrix: the argmax index is row-major over (r0, r1).
TEST(LowerReduction, ReduceOverTwoAxes) {
  arith::Var b("b"), m("m"), n("n");
  auto A = placeholder("A", {b, m, n}, kF32);
  auto r0 = reduce_axis(m, "r0");
  auto r1 = reduce_axis(n, "r1");
  auto S = compute("S", {b}, [&](const Indices& i) {
    return sum(read(A, {i[0], r0.var, r1.var}), {r0, r1});
  });
  auto I = compute("I", {b}, [&](const Indices& i) {
    return argmax(read(A, {i[0], r0.var, r1.var}), {r0, r1});
  });
  Schedule s = create_schedule({S, I});
  s[I].reorder({s[I].reduce_axis(1), s[I].axis(0), s[I].reduce_axis(0)});  // r1, i0, r0
  tir::PrimFunc f = lower_checked(s, {A, S, I}, "reduce2");
  std::mt19937 rng(12);
  for (auto [rows, cols] : kSizes2d) {
    if (rows * cols > 2000) continue;
    const int64_t batch = 3;
    vm::Tensor a = random_ints({batch, rows, cols}, rng, -3, 3, kF32);
    vm::Tensor sum_out = poisoned({batch}, kF32), arg_out = poisoned({batch}, kI64);
    run(f, {a, sum_out, arg_out});
    std::vector<double> want_sum, want_arg;
    for (int64_t k = 0; k < batch; ++k) {
      std::vector<double> flat;
      for (int64_t j = 0; j < rows * cols; ++j) flat.push_back(at(a, k * rows * cols + j));
      double acc = 0;
      for (double v : flat) acc += v;
      want_sum.push_back(acc);
      want_arg.push_back(first_extreme(flat, true));
    }
    expect_values(sum_out, want_sum, 1e-6, "sum2 " + shape_name({rows, cols}));
    expect_values(arg_out, want_arg, 0, "argmax2 " + shape_name({rows, cols}));
  }
}

// argmax_last / argmin_last over both axes with the reduce loops reordered (r1 outside r0):
// the loops meet elements out of row-major order, so ties compare flat indices.
TEST(LowerReduction, ArgLastOverTwoAxesOutOfOrder) {
  arith::Var b("b"), m("m"), n("n");
  auto A = placeholder("A", {b, m, n}, kF32);
  auto make = [&](const char* name, bool max) {
    return compute(name, {b}, [&](const Indices& i) {
      auto r0 = reduce_axis(m, "r0");
      auto r1 = reduce_axis(n, "r1");
      tir::Expr v = read(A, {i[0], r0.var, r1.var});
      return max ? argmax_last(v, {r0, r1}) : argmin_last(v, {r0, r1});
    });
  };
  auto I = make("I", true), J = make("J", false);
  Schedule s = create_schedule({I, J});
  for (const TensorRef& t : {I, J}) {
    s[t].reorder({s[t].reduce_axis(1), s[t].axis(0), s[t].reduce_axis(0)});  // r1, i0, r0
  }
  tir::PrimFunc f = lower_checked(s, {A, I, J}, "arg_last2");
  std::mt19937 rng(17);
  for (auto [rows, cols] : kSizes2d) {
    if (rows * cols > 2000) continue;
    const int64_t batch = 3;
    vm::Tensor a = random_ints({batch, rows, cols}, rng, -2, 2, kF32);
    vm::Tensor max_out = poisoned({batch}, kI64), min_out = poisoned({batch}, kI64);
    run(f, {a, max_out, min_out});
    std::vector<double> want_max, want_min;
    for (int64_t k = 0; k < batch; ++k) {
      std::vector<double> flat;
      for (int64_t j = 0; j < rows * cols; ++j) flat.push_back(at(a, k * rows * cols + j));
      want_max.push_back(last_extreme(flat, true));
      want_min.push_back(last_extreme(flat, false));
    }
    expect_values(max_out, want_max, 0, "argmax_last2 " + shape_name({rows, cols}));
    expect_values(min_out, want_min, 0, "argmin_last2 " + shape_name({rows, cols}));
  }
}

// Reduce loop outermost: the init nest runs over its own copies of the data-parallel loops.
TEST(LowerReduction, ReduceLoopOutsideDataParallelLoop) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto r = reduce_axis(m, "r");
  auto C = compute("C", {n}, [&](const Indices& i) { return sum(read(A, {r.var, i[0]}), {r}); });
  Schedule s = create_schedule({C});
  auto [jo, ji] = s[C].split(s[C].axis(0), 4);
  s[C].reorder({jo, s[C].reduce_axis(0), ji});
  s[C].vectorize(ji);
  tir::PrimFunc f = lower_checked(s, {A, C}, "col_sum");
  std::mt19937 rng(13);
  for (auto [rows, cols] : kSizes2d) {
    vm::Tensor a = random_f32({rows, cols}, rng), c = poisoned({cols}, kF32);
    run(f, {a, c});
    std::vector<double> want(static_cast<size_t>(cols), 0.0);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) want[static_cast<size_t>(j)] += at(a, i * cols + j);
    }
    expect_values(c, want, 1e-5, "col_sum " + shape_name({rows, cols}));
  }
}

// Same, for argmin: the running minimum is kept per output element.
TEST(LowerReduction, ArgMinWithReduceLoopOutside) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto r = reduce_axis(m, "r");
  auto C = compute("C", {n}, [&](const Indices& i) { return argmin(read(A, {r.var, i[0]}), {r}); });
  Schedule s = create_schedule({C});
  s[C].reorder({s[C].reduce_axis(0), s[C].axis(0)});
  tir::PrimFunc f = lower_checked(s, {A, C}, "col_argmin");
  std::mt19937 rng(14);
  for (auto [rows, cols] : kSizes2d) {
    vm::Tensor a = random_ints({rows, cols}, rng, -2, 2, kF32), c = poisoned({cols}, kI64);
    run(f, {a, c});
    std::vector<double> want;
    for (int64_t j = 0; j < cols; ++j) {
      std::vector<double> col;
      for (int64_t i = 0; i < rows; ++i) col.push_back(at(a, i * cols + j));
      want.push_back(first_extreme(col, false));
    }
    expect_values(c, want, 0, "col_argmin " + shape_name({rows, cols}));
  }
}

struct MatmulProgram {
  arith::Var M{"M"}, N{"N"}, K{"K"};
  TensorRef A, B, C;
  MatmulProgram() {
    A = placeholder("A", {M, K}, kF32);
    B = placeholder("B", {K, N}, kF32);
    auto k = reduce_axis(K, "k");
    C = compute("C", {M, N}, [&](const Indices& i) {
      return sum(read(A, {i[0], k.var}) * read(B, {k.var, i[1]}), {k});
    });
  }
};

const std::vector<std::array<int64_t, 3>> kMatmulSizes = {{1, 1, 1},   {3, 7, 17},  {17, 3, 7},
                                                          {16, 16, 8}, {129, 5, 3}, {7, 129, 2}};

void check_matmul(const tir::PrimFunc& f, const std::string& name) {
  std::mt19937 rng(15);
  for (auto [m, n, k] : kMatmulSizes) {
    vm::Tensor a = random_f32({m, k}, rng), b = random_f32({k, n}, rng);
    vm::Tensor c = poisoned({m, n}, kF32);
    run(f, {a, b, c});
    std::vector<double> want;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) acc += at(a, i * k + q) * at(b, q * n + j);
        want.push_back(acc);
      }
    }
    expect_values(c, want, 1e-5, name + " " + shape_name({m, n, k}));
  }
}

TEST(LowerReduction, MatmulSplitReorder) {
  MatmulProgram p;
  Schedule s = create_schedule({p.C});
  Stage& st = s[p.C];
  auto [ko, ki] = st.split(st.reduce_axis(0), 4);
  auto [jo, ji] = st.split(st.axis(1), 8);
  st.reorder({st.axis(0), jo, ko, ki, ji});
  st.vectorize(ji);
  check_matmul(lower_checked(s, {p.A, p.B, p.C}, "matmul_split"), "matmul_split");
}

TEST(LowerReduction, MatmulTiled) {
  MatmulProgram p;
  Schedule s = create_schedule({p.C});
  Stage& st = s[p.C];
  auto [xo, yo, xi, yi] = st.tile(st.axis(0), st.axis(1), 4, 8);
  auto [ko, ki] = st.split(st.reduce_axis(0), 2);
  st.reorder({xo, yo, ko, xi, ki, yi});
  st.parallel(xo);
  check_matmul(lower_checked(s, {p.A, p.B, p.C}, "matmul_tiled"), "matmul_tiled");
}

// TVM's register blocking: a 4x8 accumulator tile in a local buffer per (xo, yo) tile of
// C, reduced over k split by 4, then copied out.
TEST(LowerReduction, MatmulCacheWriteRegisterBlocking) {
  MatmulProgram p;
  Schedule s = create_schedule({p.C});
  TensorRef CC = s.cache_write(p.C, "local");
  auto [xo, yo, xi, yi] = s[p.C].tile(s[p.C].axis(0), s[p.C].axis(1), 4, 8);
  s[p.C].parallel(xo);
  s[CC].compute_at(s[p.C], yo);
  Stage& cc = s[CC];
  auto [ko, ki] = cc.split(cc.reduce_axis(0), 4);
  cc.reorder({ko, ki, cc.axis(0), cc.axis(1)});
  cc.unroll(ki);
  cc.vectorize(cc.axis(1));
  tir::PrimFunc f = lower_checked(s, {p.A, p.B, p.C}, "matmul_blocked");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 1u) << tir::to_string(f);
  const tir::Buffer& acc = *allocs[0]->buffer;
  EXPECT_EQ(acc.scope(), tir::BufferScope::kLocal);
  ASSERT_EQ(acc.shape().size(), 2u);
  EXPECT_EQ(acc.shape()[0].int_value(), 4);
  EXPECT_EQ(acc.shape()[1].int_value(), 8);
  // The accumulator lives inside the two tile loops.
  auto loops = stmts_of(f, tir::StmtKind::kFor);
  ASSERT_GE(loops.size(), 2u);
  EXPECT_EQ(loops[1]->body.kind(), tir::StmtKind::kAllocate);
  check_matmul(f, "matmul_blocked");
}

// The same on static shapes that the tiles divide: every guard is proven away.
TEST(LowerReduction, MatmulCacheWriteStaticDividingHasNoGuards) {
  auto A = placeholder("A", {16, 12}, kF32);
  auto B = placeholder("B", {12, 32}, kF32);
  auto k = reduce_axis(12, "k");
  auto C = compute("C", {16, 32}, [&](const Indices& i) {
    return sum(read(A, {i[0], k.var}) * read(B, {k.var, i[1]}), {k});
  });
  Schedule s = create_schedule({C});
  TensorRef CC = s.cache_write(C, "local");
  auto [xo, yo, xi, yi] = s[C].tile(s[C].axis(0), s[C].axis(1), 4, 16);
  s[CC].compute_at(s[C], yo);
  auto [ko, ki] = s[CC].split(s[CC].reduce_axis(0), 4);
  s[CC].reorder({ko, ki, s[CC].axis(0), s[CC].axis(1)});
  tir::PrimFunc f = lower_checked(s, {A, B, C}, "matmul_static");
  EXPECT_TRUE(stmts_of(f, tir::StmtKind::kIf).empty()) << tir::to_string(f);
  std::mt19937 rng(16);
  vm::Tensor a = random_f32({16, 12}, rng), b = random_f32({12, 32}, rng);
  vm::Tensor c = poisoned({16, 32}, kF32);
  run(f, {a, b, c});
  std::vector<double> want;
  for (int64_t i = 0; i < 16; ++i) {
    for (int64_t j = 0; j < 32; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < 12; ++q) acc += at(a, i * 12 + q) * at(b, q * 32 + j);
      want.push_back(acc);
    }
  }
  expect_values(c, want, 1e-5, "matmul_static");
}

// cache_write(..., "global") on a small static reduction: the cache is a workspace buffer
// even though it would fit on the stack, and the output is a copy out of it.
TEST(LowerReduction, CacheWriteGlobalIsWorkspace) {
  auto A = placeholder("A", {4, 6}, kF32);
  auto r = reduce_axis(6, "r");
  auto C = compute("C", {4}, [&](const Indices& i) { return sum(read(A, {i[0], r.var}), {r}); });
  Schedule s = create_schedule({C});
  TensorRef CC = s.cache_write(C, "global");
  EXPECT_EQ(CC->name(), "C.local");
  tir::PrimFunc f = lower_checked(s, {A, C}, "cached_sum");
  auto allocs = stmts_of(f, tir::StmtKind::kAllocate);
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->buffer->scope(), tir::BufferScope::kWorkspace);
  std::mt19937 rng(17);
  vm::Tensor a = random_f32({4, 6}, rng), c = poisoned({4}, kF32);
  run(f, {a, c});
  std::vector<double> want;
  for (int64_t i = 0; i < 4; ++i) {
    double acc = 0;
    for (int64_t j = 0; j < 6; ++j) acc += at(a, i * 6 + j);
    want.push_back(acc);
  }
  expect_values(c, want, 1e-6, "cached_sum");
}

}  // namespace
}  // namespace dynvm::te
