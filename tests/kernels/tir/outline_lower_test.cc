// outline_parallel (regions with exactly the captures they need, checked by evaluating each
// region with only its captures) and the whole lower() pipeline: every test kernel lowered
// and compared with its input on values, plus the dump and timing options.
#include <gtest/gtest.h>

#include <sstream>

#include "kernels/arith/simplify.h"
#include "kernels/tir/lower.h"
#include "kernels/tir/passes/passes.h"
#include "kernels/tir/verifier.h"
#include "tests/kernels/tir/tir_test_util.h"
#include "vm/error.h"

namespace dynvm::tir::test {
namespace {

std::vector<std::string> names(const std::vector<arith::Expr>& vars) {
  std::vector<std::string> out;
  for (const auto& v : vars) out.push_back(v->name);
  return out;
}
std::vector<std::string> names(const std::vector<BufferRef>& buffers) {
  std::vector<std::string> out;
  for (const auto& b : buffers) out.push_back(b->name());
  return out;
}

TEST(TirOutlineParallel, OuterParallelLoopBecomesARegion) {
  PrimFunc f = flatten_storage(row_sum(ForKind::kParallel));
  LoweredFunc lf = outline_parallel(f);
  verify(lf);
  ASSERT_EQ(lf.regions.size(), 1u);
  ASSERT_EQ(lf.func.body.kind(), StmtKind::kParallelCall);
  EXPECT_EQ(arith::to_string(lf.func.body->extent), "m");
  const ParallelRegion& r = lf.regions[0];
  EXPECT_EQ(r.name, "row_sum_parallel0");
  EXPECT_EQ(r.loop_var->name, "i");
  EXPECT_EQ(names(r.captured_vars), (std::vector<std::string>{"k"}));
  EXPECT_EQ(names(r.captured_buffers), (std::vector<std::string>{"A", "S"}));  // not acc
  for (auto [m, k] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 3}, {129, 17}}) {
    expect_equivalent(f, lf, {random_tensor({m, k})},
                      "m=" + std::to_string(m) + " k=" + std::to_string(k));
  }
}

TEST(TirOutlineParallel, RegionsInsideSerialLoopsCaptureTheLoopVariable) {
  Var n("n"), b("b"), i("i"), j("j");
  auto A = buf("A", {b, n}), C = buf("C", {b, n});
  // for b0: parallel for i in [2, n): parallel for j in [0, 1): C[b0, i] = A[b0, i] + 1
  Var b0("b0");
  Stmt inner = make_for(j, 0, 1, ForKind::kParallel,
                        make_store(C, {b0, i + j}, load(A, {b0, i + j}) + f32c(1)));
  Stmt body =
      make_for(b0, 0, b, ForKind::kSerial,
               make_seq({make_for(i, 0, 2, ForKind::kSerial, make_store(C, {b0, i}, f32c(7))),
                         make_for(i, 2, n - 2, ForKind::kParallel, inner)}));
  PrimFunc f{"batched", {A, C}, 1, body};
  LoweredFunc lf = outline_parallel(f);
  verify(lf, VerifyStage::kLowered);
  ASSERT_EQ(lf.regions.size(), 1u);
  const ParallelRegion& r = lf.regions[0];
  // n is only the call's extent, evaluated by the entry; the body sees i rebased to lv + 2.
  EXPECT_EQ(names(r.captured_vars), (std::vector<std::string>{"b0"}));
  EXPECT_NE(to_string(lf).find("parallel_call(region 0, n - 2)"), std::string::npos)
      << to_string(lf);
  EXPECT_NE(to_string(r.body).find("C[b0, i + 2 + j] = "), std::string::npos) << to_string(lf);
  EXPECT_EQ(count_loops(r.body, ForKind::kParallel), 0);  // the nested one became serial
  EXPECT_EQ(count_loops(r.body, ForKind::kSerial), 1);
  for (auto [bv, nv] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {2, 3}, {3, 17}}) {
    expect_equivalent(f, lf, {random_tensor({bv, nv})},
                      "b=" + std::to_string(bv) + " n=" + std::to_string(nv));
  }
}

// The work of one region iteration, from which the call's grain is computed: stores times
// the extents of their loops, in the call site's variables; an extent that depends on a
// variable of the region counts as 16.
// A store weighs one plus its value's loads; a loop whose extent the call site cannot know
// (j up to i) counts as 16 iterations.
TEST(TirOutlineParallel, RegionsCountTheStoresAndLoadsOfOneIteration) {
  Var n("n"), i("i"), j("j"), k("k");
  auto A = buf("A", {n, n}), C = buf("C", {n, n});
  // parallel for i in [0, n): { for j in [0, n): for k in [0, 4): C[i, j] = A[i, j] + 1;
  //                            C[i, 0] = 7; for j in [0, i): C[i, j] = 0 }
  Stmt body =
      make_for(i, 0, n, ForKind::kParallel,
               make_seq({make_for(j, 0, n, ForKind::kSerial,
                                  make_for(k, 0, 4, ForKind::kSerial,
                                           make_store(C, {i, j}, load(A, {i, j}) + f32c(1)))),
                         make_store(C, {i, 0}, f32c(7)),
                         make_for(j, 0, i, ForKind::kSerial, make_store(C, {i, j}, f32c(0)))}));
  LoweredFunc lf = outline_parallel(PrimFunc{"work", {A, C}, 1, body});
  ASSERT_EQ(lf.regions.size(), 1u);
  const arith::Expr& work = lf.regions[0].work_per_iteration;
  EXPECT_TRUE(arith::structural_equal(arith::simplify(work), arith::simplify(n * 8 + 17)))
      << arith::to_string(work);
}

TEST(TirOutlineParallel, SerialFunctionsHaveNoRegions) {
  LoweredFunc lf = outline_parallel(transpose());
  EXPECT_TRUE(lf.regions.empty());
}

TEST(TirLower, EveryTestKernelKeepsItsOutputs) {
  LowerOptions checked;
  checked.verify_each = true;  // each pass's output must pass the verifier at its stage
  for (const PrimFunc& f : {add_split(16, ForKind::kVectorized, ForKind::kParallel),
                            add_split(8, ForKind::kUnrolled), add_split(5)}) {
    LoweredFunc lf = lower(f, checked);
    for (int64_t n : test_sizes()) {
      expect_equivalent(
          f, lf, {random_tensor({n}, DType::kFloat32, 1), random_tensor({n}, DType::kFloat32, 2)},
          f.name + " n=" + std::to_string(n));
    }
  }
  for (const PrimFunc& f : {transpose(ForKind::kVectorized), transpose_tiled()}) {
    LoweredFunc lf = lower(f, checked);
    for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 17}, {33, 8}}) {
      expect_equivalent(f, lf, {random_tensor({m, n})},
                        f.name + " m=" + std::to_string(m) + " n=" + std::to_string(n));
    }
  }
  PrimFunc rs = row_sum(ForKind::kParallel);
  LoweredFunc lrs = lower(rs, checked);
  EXPECT_EQ(lrs.regions.size(), 1u);
  expect_equivalent(rs, lrs, {random_tensor({9, 130})}, "row_sum");
  PrimFunc pp = pairwise_product();
  LoweredFunc lpp = lower(pp, checked);
  for (int64_t n : test_sizes()) {
    expect_equivalent(pp, lpp, {random_tensor({n, 2})}, "pairwise n=" + std::to_string(n));
  }
}

TEST(TirLower, SplitsOfEveryFactorAndLoopKindKeepTheirOutputs) {
  LowerOptions checked;
  checked.verify_each = true;
  for (int64_t factor : {1, 2, 3, 8, 16, 33, 100}) {
    for (ForKind inner : {ForKind::kSerial, ForKind::kVectorized, ForKind::kUnrolled}) {
      for (ForKind outer : {ForKind::kSerial, ForKind::kParallel}) {
        PrimFunc f = add_split(factor, inner, outer);
        LoweredFunc lf = lower(f, checked);
        for (int64_t n : test_sizes()) {
          expect_equivalent(
              f, lf,
              {random_tensor({n}, DType::kFloat32, 1), random_tensor({n}, DType::kFloat32, 2)},
              str_cat("factor=", factor, " inner=", for_kind_name(inner),
                      " outer=", for_kind_name(outer), " n=", n));
        }
      }
    }
  }
}

TEST(TirLower, SplitAddLowersToAVectorMainRegionAndAScalarTail) {
  LoweredFunc lf = lower(add_split(16, ForKind::kVectorized, ForKind::kParallel));
  std::string text = to_string(lf);
  EXPECT_NE(text.find("  parallel_call(region 0, n floordiv 16)"), std::string::npos) << text;
  EXPECT_NE(text.find("C[ramp(io*16, 1, 16)] = (A[ramp(io*16, 1, 16)] + B[ramp(io*16, 1, 16)])"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("if ("), std::string::npos) << text;
}

TEST(TirLower, DumpsTheIrAfterTheNamedPassAndTimesEveryPass) {
  std::ostringstream os;
  LowerOptions opts;
  opts.dump_after = "vectorize";
  opts.dump_stream = &os;
  opts.time_passes = true;
  lower(add_split(16, ForKind::kVectorized), opts);
  std::string text = os.str();
  EXPECT_NE(text.find("// IR after vectorize\ndef add_split("), std::string::npos) << text;
  EXPECT_EQ(text.find("// IR after unroll"), std::string::npos) << text;
  for (const char* pass : {"simplify", "loop_partition", "vectorize", "unroll", "flatten_storage",
                           "outline_parallel"}) {
    EXPECT_NE(text.find(std::string("pass ") + pass), std::string::npos) << pass << "\n" << text;
  }
  EXPECT_NE(text.find("(unchanged)"), std::string::npos) << text;  // unroll had nothing to do

  std::ostringstream all;
  LowerOptions dump_all;
  dump_all.dump_after = "all";
  dump_all.dump_stream = &all;
  lower(transpose(), dump_all);
  EXPECT_NE(all.str().find("// IR before lowering"), std::string::npos);
  EXPECT_NE(all.str().find("// IR after outline_parallel"), std::string::npos);
}

TEST(TirLower, RejectsMalformedInput) {
  Var n("n"), i("i"), stray("stray");
  auto A = buf("A", {n});
  PrimFunc f{"f", {A}, 0, make_for(i, 0, n, ForKind::kSerial, make_store(A, {stray}, f32c(1)))};
  EXPECT_THROW(lower(f), InternalError);
}

}  // namespace
}  // namespace dynvm::tir::test
