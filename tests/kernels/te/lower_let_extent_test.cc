// Reductions whose extents are read per element (let_index bindings around the reduction at
// the body's root, tensor.h): ragged row sums and maxima over lengths read from a tensor
// (negative lengths clamped to 0), reduce loops split with a guarded tail and unrolled,
// data-parallel loops parallel, two per-element extents, a stage computed at its consumer's
// loop, a data-parallel loop inside the reduce loop when the lets do not read its index;
// each lowered by TE and run on the reference TIR evaluator, before and after the whole TIR
// pipeline (loop partition, specialize_extents, unroll, outlining). Misuse: a let that reads
// a reduce variable, or the index of a loop inside the reduce loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "kernels/tir/lower.h"
#include "tests/kernels/te/te_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::te {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

// Rows x columns, with lengths from -2 to columns + 0 (clamped to [0, columns] by the math).
const std::vector<std::pair<int64_t, int64_t>> kSizes = {{1, 1}, {5, 7}, {9, 33}, {3, 1}};

vm::Tensor random_lengths(int64_t rows, int64_t cols, std::mt19937& rng) {
  return random_ints({rows}, rng, -2, cols, kI64);
}

int64_t clamped_length(const vm::Tensor& lengths, int64_t row) {
  return std::max<int64_t>(lengths.data_as<int64_t>()[row], 0);
}

// Runs f on the TIR evaluator twice, the output (the last argument, f32) poisoned before
// each: as TE lowered it and after the whole TIR pipeline.
void run_both(const tir::PrimFunc& f, const std::vector<vm::Tensor>& args,
              const std::function<void()>& check) {
  vm::Tensor out = args.back();
  auto poison = [&] { std::fill_n(out.data_as<float>(), out.numel(), NAN); };
  poison();
  run(f, args);
  check();
  poison();
  tir::testing::evaluate(tir::lower(f), args);
  check();
}

// S[i] = sum of A[i, 0 .. len_i), len_i = max(L[i], 0).
struct RaggedSum {
  arith::Var m{"m"}, n{"n"}, len{"len"};
  TensorRef A = placeholder("A", {m, n}, kF32);
  TensorRef L = placeholder("L", {m}, kI64);
  IterVar r = reduce_axis(len, "r");
  TensorRef S = compute("S", {m}, [&](const Indices& i) {
    tir::Expr length = tir::max(read(L, {i[0]}), tir::make_const_int(tir::i64(), 0));
    return tir::let_index(len, length, sum(read(A, {i[0], r.var}), {r}));
  });
};

void check_ragged_sum(const std::function<void(Schedule&, const RaggedSum&)>& apply,
                      const std::string& name) {
  RaggedSum p;
  Schedule s = create_schedule({p.S});
  apply(s, p);
  tir::PrimFunc f = lower_checked(s, {p.A, p.L, p.S}, name);
  std::mt19937 rng(31);
  for (auto [rows, cols] : kSizes) {
    vm::Tensor a = random_f32({rows, cols}, rng), l = random_lengths(rows, cols, rng);
    vm::Tensor out = poisoned({rows}, kF32);
    std::vector<double> want;
    for (int64_t i = 0; i < rows; ++i) {
      double acc = 0;
      for (int64_t j = 0; j < clamped_length(l, i); ++j) acc += at(a, i * cols + j);
      want.push_back(acc);
    }
    run_both(f, {a, l, out}, [&] {
      expect_values(out, want, 1e-5, name + shape_name({rows, cols}));
    });
  }
}

TEST(LowerLetExtent, RaggedRowSum) {
  check_ragged_sum([](Schedule&, const RaggedSum&) {}, "ragged_sum");
}

TEST(LowerLetExtent, RaggedRowSumSplitUnrolledAndParallel) {
  check_ragged_sum(
      [](Schedule& s, const RaggedSum& p) {
        auto [ro, ri] = s[p.S].split(s[p.S].reduce_axis(0), 4);
        s[p.S].unroll(ri);
        s[p.S].parallel(s[p.S].axis(0));
      },
      "ragged_sum_split");
}

TEST(LowerLetExtent, TheLetIsBoundOncePerElementAroundTheReduceLoop) {
  RaggedSum p;
  Schedule s = create_schedule({p.S});
  tir::PrimFunc f = lower_checked(s, {p.A, p.L, p.S}, "ragged_sum_shape");
  std::vector<tir::Stmt> lets = stmts_of(f, tir::StmtKind::kLetIndex);
  ASSERT_EQ(lets.size(), 1u);
  // Inside the row loop, around the init store and the reduce loop.
  std::vector<tir::Stmt> loops = stmts_of(f, tir::StmtKind::kFor);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[0]->body.get(), lets[0].get());
  EXPECT_TRUE(arith::uses_var(loops[1]->extent, arith::Var(lets[0]->let_var).id()));
}

// Max over a 2-D window of per-row height x width, then a consumer divides by the count
// (the stage computed at the consumer's loop): RoiAlign's shape of computation.
TEST(LowerLetExtent, TwoExtentsComputedAtTheConsumer) {
  arith::Var m("m"), h("h"), w("w"), gh("gh"), gw("gw");
  auto A = placeholder("A", {m, h, w}, kF32);
  auto G = placeholder("G", {m, arith::Expr(2)}, kI64);
  IterVar ry = reduce_axis(gh, "ry"), rx = reduce_axis(gw, "rx");
  auto zero = tir::make_const_int(tir::i64(), 0);
  auto M = compute("M", {m}, [&](const Indices& i) {
    return tir::let_index(gh, tir::max(read(G, {i[0], arith::Expr(0)}), zero),
                          tir::let_index(gw, tir::max(read(G, {i[0], arith::Expr(1)}), zero),
                                         max_reduce(read(A, {i[0], ry.var, rx.var}), {ry, rx})));
  });
  auto Y = compute("Y", {m}, [&](const Indices& i) {
    arith::Var a("a"), b("b");
    tir::Expr count = tir::index_value(a * b, tir::f32());
    tir::Expr value =
        tir::select(tir::compare(tir::CompareOp::kGt, count, tir::make_const(tir::f32(), 0)),
                    read(M, {i[0]}) / count, tir::make_const(tir::f32(), 0));
    return tir::let_index(
        a, tir::max(read(G, {i[0], arith::Expr(0)}), zero),
        tir::let_index(b, tir::max(read(G, {i[0], arith::Expr(1)}), zero), value));
  });
  Schedule s = create_schedule({Y});
  s[Y].parallel(s[Y].axis(0));
  s[M].compute_at(s[Y], s[Y].axis(0));
  auto [xo, xi] = s[M].split(s[M].reduce_axis(1), 2);
  s[M].unroll(xi);
  tir::PrimFunc f = lower_checked(s, {A, G, Y}, "window_max");
  std::mt19937 rng(32);
  for (int64_t rows : {1, 4}) {
    const int64_t hh = 5, ww = 6;
    vm::Tensor a = random_f32({rows, hh, ww}, rng);
    vm::Tensor g = random_ints({rows, 2}, rng, -1, 5, kI64);
    vm::Tensor out = poisoned({rows}, kF32);
    std::vector<double> want;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t gy = std::max<int64_t>(g.data_as<int64_t>()[2 * i], 0);
      const int64_t gx = std::max<int64_t>(g.data_as<int64_t>()[2 * i + 1], 0);
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t y = 0; y < gy; ++y) {
        for (int64_t x = 0; x < gx; ++x) best = std::max(best, at(a, (i * hh + y) * ww + x));
      }
      want.push_back(gy * gx > 0 ? best / static_cast<double>(gy * gx) : 0.0);
    }
    run_both(f, {a, g, out}, [&] { expect_values(out, want, 1e-5, "window_max"); });
  }
}

TEST(LowerLetExtent, RejectsALetThatReadsAReduceVariable) {
  arith::Var m("m"), n("n"), len("len");
  auto A = placeholder("A", {m, n}, kF32);
  auto L = placeholder("L", {m, n}, kI64);
  IterVar r = reduce_axis(len, "r");
  EXPECT_USER_ERROR(
      compute(
          "S", {m},
          [&](const Indices& i) {
            return tir::let_index(len, read(L, {i[0], r.var}), sum(read(A, {i[0], r.var}), {r}));
          }),
      "uses the reduce variable r");
}

// S[i, j] = sum of A[i, 0 .. len_i, j]: the column loop inside the reduce loop, which the
// let (reading only i) stays outside of; the init runs over its own copy of the columns.
TEST(LowerLetExtent, ADataParallelLoopTheLetDoesNotReadMaySitInside) {
  arith::Var m("m"), n("n"), k("k"), len("len");
  auto A = placeholder("A", {m, n, k}, kF32);
  auto L = placeholder("L", {m}, kI64);
  IterVar r = reduce_axis(len, "r");
  auto S = compute("S", {m, k}, [&](const Indices& i) {
    tir::Expr length = tir::max(read(L, {i[0]}), tir::make_const_int(tir::i64(), 0));
    return tir::let_index(len, length, sum(read(A, {i[0], r.var, i[1]}), {r}));
  });
  Schedule s = create_schedule({S});
  s[S].reorder({s[S].axis(0), s[S].reduce_axis(0), s[S].axis(1)});
  tir::PrimFunc f = lower_checked(s, {A, L, S}, "ragged_columns");
  std::mt19937 rng(33);
  for (auto [rows, cols] : kSizes) {
    const int64_t depth = 3;
    vm::Tensor a = random_f32({rows, cols, depth}, rng), l = random_lengths(rows, cols, rng);
    vm::Tensor out = poisoned({rows, depth}, kF32);
    std::vector<double> want;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t d = 0; d < depth; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < clamped_length(l, i); ++j) acc += at(a, (i * cols + j) * depth + d);
        want.push_back(acc);
      }
    }
    run_both(f, {a, l, out}, [&] { expect_values(out, want, 1e-5, "ragged_columns"); });
  }
}

TEST(LowerLetExtent, RejectsALetReadingALoopInsideTheReduceLoop) {
  RaggedSum p;
  Schedule s = create_schedule({p.S});
  s[p.S].reorder({s[p.S].reduce_axis(0), s[p.S].axis(0)});
  EXPECT_USER_ERROR(lower(s, {p.A, p.L, p.S}, "ragged_sum_reordered"),
                    "reads an index of loop i0, which is inside its reduce loops");
}

}  // namespace
}  // namespace dynvm::te
