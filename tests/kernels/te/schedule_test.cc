// TE construction and the schedule primitives: the loop structure they record and lower
// to (leaf order, loop kinds, guards present only when a split may not divide), and the
// UserErrors for misuse.
#include <gtest/gtest.h>

#include "tests/kernels/te/te_test_util.h"
#include "vm/error.h"

namespace dynvm::te {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

std::vector<std::string> leaf_names(const Stage& stage) {
  std::vector<std::string> names;
  for (const IterVarRef& axis : stage.leaf_axes()) names.push_back(axis->name);
  return names;
}

// A, B = A + 1, C = B * A over one dim of the given extent.
struct AddProgram {
  TensorRef A, B, C;
  explicit AddProgram(arith::Expr extent) {
    A = placeholder("A", {extent}, kF32);
    B = compute("B", {extent},
                [&](const Indices& i) { return read(A, {i[0]}) + tir::make_const(tir::f32(), 1); });
    C = compute("C", {extent}, [&](const Indices& i) { return read(B, {i[0]}) * read(A, {i[0]}); });
  }
};

template <typename F>
void expect_user_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no UserError; expected one mentioning '" << fragment << "'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// ---- TE ----

TEST(TensorExpr, ComputeRecordsInputsAndDtype) {
  arith::Var n("n");
  auto A = placeholder("A", {n}, kF32);
  auto I = placeholder("I", {n}, kI64);
  auto C = compute("C", {n}, [&](const Indices& i) {
    return tir::cast(tir::i64(), read(A, {i[0]})) + read(I, {i[0]}) + read(I, {i[0]});
  });
  EXPECT_EQ(C->dtype(), kI64);
  ASSERT_EQ(C->inputs().size(), 2u);
  EXPECT_EQ(C->inputs()[0], A);
  EXPECT_EQ(C->inputs()[1], I);
  ASSERT_EQ(C->axis().size(), 1u);
  EXPECT_EQ(C->axis()[0].name(), "i0");
  EXPECT_TRUE(C->reduce_axes().empty());
}

TEST(TensorExpr, ReadChecksRank) {
  auto A = placeholder("A", {3, 4}, kF32);
  expect_user_error([&] { read(A, {0}); }, "1 indices for a tensor of rank 2");
}

TEST(TensorExpr, ReductionMustBeTheRoot) {
  auto A = placeholder("A", {3, 4}, kF32);
  auto r = reduce_axis(4, "r");
  expect_user_error(
      [&] {
        compute("C", {3}, [&](const Indices& i) {
          return sum(read(A, {i[0], r.var}), {r}) + tir::make_const(tir::f32(), 1);
        });
      },
      "must be the root");
  auto C = compute("C", {3}, [&](const Indices& i) {
    return max_reduce(read(A, {i[0], r.var}), {r});
  });
  ASSERT_EQ(C->reduce_axes().size(), 1u);
  EXPECT_EQ(C->reduce_axes()[0].var.id(), r.var.id());
  EXPECT_EQ(C->body()->reduce_op, tir::ReduceOp::kMax);
  EXPECT_FALSE(C->body()->operands[1].defined());  // identity init
}

TEST(TensorExpr, ArgmaxIsInt64) {
  auto A = placeholder("A", {3, 4}, kF32);
  auto r = reduce_axis(4, "r");
  auto C = compute("C", {3}, [&](const Indices& i) { return argmax(read(A, {i[0], r.var}), {r}); });
  EXPECT_EQ(C->dtype(), kI64);
}

// ---- structure ----

TEST(Schedule, StagesForComputesOnly) {
  AddProgram p(arith::Expr(8));
  Schedule s = create_schedule({p.C});
  ASSERT_EQ(s.stages().size(), 2u);
  EXPECT_EQ(s.stages()[0]->name(), "B");  // producers first
  EXPECT_EQ(s.stages()[1]->name(), "C");
  EXPECT_TRUE(s[p.C].is_output());
  EXPECT_FALSE(s[p.B].is_output());
  expect_user_error([&] { s[p.A]; }, "placeholder");
}

TEST(Schedule, TileLeafOrder) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto C = compute("C", {m, n}, [&](const Indices& i) { return read(A, {i[0], i[1]}); });
  Schedule s = create_schedule({C});
  auto [xo, yo, xi, yi] = s[C].tile(s[C].axis(0), s[C].axis(1), 4, 8);
  EXPECT_EQ(leaf_names(s[C]),
            (std::vector<std::string>{"i0.outer", "i1.outer", "i0.inner", "i1.inner"}));
  EXPECT_EQ(xi->extent.int_value(), 4);
  EXPECT_EQ(yi->extent.int_value(), 8);
  IterVarRef f = s[C].fuse(xo, yo);
  EXPECT_EQ(leaf_names(s[C]),
            (std::vector<std::string>{"i0.outer.i1.outer.fused", "i0.inner", "i1.inner"}));
  s[C].reorder({yi, f});
  EXPECT_EQ(leaf_names(s[C]),
            (std::vector<std::string>{"i1.inner", "i0.inner", "i0.outer.i1.outer.fused"}));
}

TEST(Schedule, GuardOnlyWhenSplitMayNotDivide) {
  arith::Var n("n");
  {
    AddProgram p(n * 16);
    Schedule s = create_schedule({p.C});
    s[p.B].compute_inline();
    s[p.C].split(s[p.C].axis(0), 16);
    tir::PrimFunc f = lower(s, {p.A, p.C}, "divides");
    EXPECT_TRUE(stmts_of(f, tir::StmtKind::kIf).empty()) << tir::to_string(f);
  }
  {
    AddProgram p(n * 16);
    Schedule s = create_schedule({p.C});
    s[p.B].compute_inline();
    s[p.C].split(s[p.C].axis(0), 32);  // n*16 by 32 divides only for even n
    tir::PrimFunc f = lower(s, {p.A, p.C}, "may_not_divide");
    EXPECT_EQ(stmts_of(f, tir::StmtKind::kIf).size(), 1u) << tir::to_string(f);
  }
  {
    AddProgram p(n);
    Schedule s = create_schedule({p.C});
    s[p.B].compute_inline();
    auto [o, i] = s[p.C].split(s[p.C].axis(0), 4);
    s[p.C].split(i, 2);  // 4 by 2 divides: still one guard, for n by 4
    tir::PrimFunc f = lower_checked(s, {p.A, p.C}, "nested");
    EXPECT_EQ(stmts_of(f, tir::StmtKind::kIf).size(), 1u) << tir::to_string(f);
  }
}

TEST(Schedule, SplitByNpartsValues) {
  arith::Var n("n");
  AddProgram p(n);
  Schedule s = create_schedule({p.C});
  auto [o, i] = s[p.C].split_by_nparts(s[p.C].axis(0), 3);
  EXPECT_EQ(o->extent.int_value(), 3);
  tir::PrimFunc f = lower_checked(s, {p.A, p.C}, "nparts");
  std::mt19937 rng(21);
  for (int64_t len : {1, 2, 3, 7, 17, 129}) {
    vm::Tensor a = random_f32({len}, rng), c = poisoned({len}, kF32);
    run(f, {a, c});
    std::vector<double> want;
    for (int64_t k = 0; k < len; ++k) want.push_back(static_cast<float>(at(a, k) + 1) * at(a, k));
    expect_values(c, want, 1e-6, "nparts n=" + std::to_string(len));
  }
}

TEST(Schedule, AnnotationsBecomeLoopKinds) {
  arith::Var m("m"), n("n");
  auto A = placeholder("A", {m, n}, kF32);
  auto C = compute("C", {m, n}, [&](const Indices& i) { return read(A, {i[0], i[1]}); });
  Schedule s = create_schedule({C});
  auto [xo, xi] = s[C].split(s[C].axis(0), 32);
  s[C].bind(xo, "blockIdx.x");
  s[C].bind(xi, "threadIdx.x");
  auto [yo, yi] = s[C].split(s[C].axis(1), 4);
  s[C].unroll(yi);
  tir::PrimFunc f = lower_checked(s, {A, C}, "gpu");
  auto loops = stmts_of(f, tir::StmtKind::kFor);
  ASSERT_EQ(loops.size(), 4u);
  EXPECT_EQ(loops[0]->for_kind, tir::ForKind::kGpuBlock);
  EXPECT_EQ(loops[0]->thread_axis, 0);
  EXPECT_EQ(loops[1]->for_kind, tir::ForKind::kGpuThread);
  EXPECT_EQ(loops[2]->for_kind, tir::ForKind::kSerial);
  EXPECT_EQ(loops[3]->for_kind, tir::ForKind::kUnrolled);
  expect_user_error([&] { s[C].bind(yo, "threadIdx.x"); }, "already bound");
  expect_user_error([&] { s[C].bind(yo, "warp.x"); }, "unknown thread tag");
}

// ---- misuse ----

TEST(ScheduleErrors, SplitAxisTwice) {
  AddProgram p(arith::Expr(64));
  Schedule s = create_schedule({p.C});
  IterVarRef x = s[p.C].axis(0);
  s[p.C].split(x, 8);
  expect_user_error([&] { s[p.C].split(x, 4); }, "no longer a loop");
  expect_user_error([&] { s[p.C].split(s[p.C].leaf_axes()[0], 0); }, "not positive");
}

TEST(ScheduleErrors, AxisOfAnotherStage) {
  AddProgram p(arith::Expr(64));
  Schedule s = create_schedule({p.C});
  expect_user_error([&] { s[p.C].reorder({s[p.B].axis(0)}); }, "belongs to stage B");
  expect_user_error([&] { s[p.C].vectorize(s[p.B].axis(0)); }, "belongs to stage B");
}

TEST(ScheduleErrors, FuseNeedsAdjacentLoopsOfOneKind) {
  auto A = placeholder("A", {4, 5, 6}, kF32);
  auto r = reduce_axis(6, "r");
  auto C = compute("C", {4, 5}, [&](const Indices& i) {
    return sum(read(A, {i[0], i[1], r.var}), {r});
  });
  Schedule s = create_schedule({C});
  expect_user_error([&] { s[C].fuse(s[C].axis(1), s[C].axis(0)); }, "directly around");
  expect_user_error([&] { s[C].fuse(s[C].axis(1), s[C].reduce_axis(0)); },
                    "data-parallel and reduce");
  expect_user_error([&] { s[C].parallel(s[C].reduce_axis(0)); }, "reduce axis");
  expect_user_error([&] { s[C].reorder({s[C].axis(0), s[C].axis(0)}); }, "listed twice");
}

TEST(ScheduleErrors, UnrollSymbolicExtent) {
  arith::Var n("n");
  AddProgram p(n);
  Schedule s = create_schedule({p.C});
  s[p.C].unroll(s[p.C].axis(0));
  expect_user_error([&] { lower(s, {p.A, p.C}, "vec"); }, "non-constant extent");
}

TEST(Schedule, VectorizeSymbolicExtentIsAVectorizedLoop) {
  // tir's vectorize makes it vector chunks and a masked remainder.
  arith::Var n("n");
  AddProgram p(n);
  Schedule s = create_schedule({p.C});
  s[p.C].vectorize(s[p.C].axis(0));
  tir::PrimFunc f = lower(s, {p.A, p.C}, "vec");
  int vectorized = 0;
  tir::for_each_stmt(f.body, [&](const tir::Stmt& st) {
    if (st.kind() == tir::StmtKind::kFor && st->for_kind == tir::ForKind::kVectorized) ++vectorized;
  });
  EXPECT_EQ(vectorized, 1) << tir::to_string(f);
}

TEST(ScheduleErrors, InlineAndAttachRules) {
  AddProgram p(arith::Expr(64));
  Schedule s = create_schedule({p.C});
  expect_user_error([&] { s[p.C].compute_inline(); }, "output");
  expect_user_error([&] { s[p.C].compute_at(s[p.B], s[p.B].axis(0)); }, "output");
  expect_user_error([&] { s[p.B].compute_at(s[p.C], s[p.B].axis(0)); }, "belongs to stage B");

  auto A = placeholder("A", {4, 6}, kF32);
  auto r = reduce_axis(6, "r");
  auto R = compute("R", {4}, [&](const Indices& i) { return sum(read(A, {i[0], r.var}), {r}); });
  auto D = compute("D", {4}, [&](const Indices& i) { return read(R, {i[0]}); });
  Schedule s2 = create_schedule({D});
  expect_user_error([&] { s2[R].compute_inline(); }, "reduction");
}

TEST(ScheduleErrors, ComputeAtNeedsTheOnlyReader) {
  arith::Var n("n");
  auto A = placeholder("A", {n}, kF32);
  auto B = compute("B", {n}, [&](const Indices& i) { return read(A, {i[0]}); });
  auto C = compute("C", {n}, [&](const Indices& i) { return read(B, {i[0]}); });
  auto D = compute("D", {n}, [&](const Indices& i) { return read(B, {i[0]}) + read(C, {i[0]}); });
  Schedule s = create_schedule({D});
  s[B].compute_at(s[C], s[C].axis(0));
  // D reads B but is not computed at C's loop.
  expect_user_error([&] { lower(s, {A, D}, "two_readers"); }, "also read by D");
  // Inlining C makes D the only reader: computing B at D is then fine.
  s[C].compute_inline();
  s[B].compute_at(s[D], s[D].axis(0));
  tir::PrimFunc f = lower_checked(s, {A, D}, "one_reader");
  std::mt19937 rng(22);
  vm::Tensor a = random_f32({17}, rng), d = poisoned({17}, kF32);
  run(f, {a, d});
  std::vector<double> want;
  for (int64_t i = 0; i < 17; ++i) want.push_back(2 * at(a, i));
  expect_values(d, want, 1e-6, "one_reader");
}

TEST(ScheduleErrors, ComputeAtAxisSplitAfterwards) {
  arith::Var n("n");
  AddProgram p(n);
  Schedule s = create_schedule({p.C});
  IterVarRef x = s[p.C].axis(0);
  s[p.B].compute_at(s[p.C], x);
  s[p.C].split(x, 4);
  expect_user_error([&] { lower(s, {p.A, p.C}, "moved"); }, "no longer a loop");
}

TEST(ScheduleErrors, CacheWriteMustComeFirst) {
  AddProgram p(arith::Expr(64));
  Schedule s = create_schedule({p.C});
  s[p.C].split(s[p.C].axis(0), 8);
  expect_user_error([&] { s.cache_write(p.C, "local"); }, "before any other primitive");
  expect_user_error([&] { s.cache_write(p.B, "shared"); }, "unknown scope");
}

TEST(ScheduleErrors, ArgumentsMustCoverTheProgram) {
  arith::Var n("n");
  AddProgram p(n);
  Schedule s = create_schedule({p.C});
  expect_user_error([&] { lower(s, {p.C}, "no_input"); }, "reads A, which is not among");
  expect_user_error([&] { lower(s, {p.A}, "no_output"); }, "no output");
  expect_user_error([&] { lower(s, {p.C, p.A}, "order"); }, "comes after an output");
  expect_user_error([&] { lower(s, {p.A, p.B}, "missing"); }, "output C is not among");
}

}  // namespace
}  // namespace dynvm::te
