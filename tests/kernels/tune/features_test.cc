// kernel_features on kernels the op library really lowers (matmul, relu, conv) under
// different knobs and shapes, with values checked where they are known by hand (a 64^3
// matmul does 2^19 flops), and on hand-built TIR that no op produces (if / else chains,
// lets, a parallel call to a missing region, an empty function).
#include "kernels/tune/features.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "kernels/ops/conv.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/matmul.h"

namespace dynvm::tune {
namespace {

constexpr vm::DType kF32 = vm::DType::kFloat32;

ops::TensorType f32(std::vector<arith::Expr> shape) { return {kF32, std::move(shape)}; }

// The value of the feature called `name` in `v`.
float feature(const std::vector<float>& v, const std::string& name) {
  const std::vector<std::string> names = feature_names();
  auto it = std::find(names.begin(), names.end(), name);
  EXPECT_NE(it, names.end()) << "no feature named " << name;
  return it == names.end() ? NAN : v[static_cast<size_t>(it - names.begin())];
}

double log_scale(double x) { return std::log2(1.0 + x); }

tir::LoweredFunc lower_matmul(arith::Expr m, int64_t k, int64_t n, const ops::KnobValues& knobs) {
  return ops::lower_op(ops::matmul(f32({m, k}), f32({k, n})), knobs, "matmul");
}

void expect_well_formed(const std::vector<float>& v) {
  ASSERT_EQ(v.size(), kNumFeatures);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_TRUE(std::isfinite(v[i])) << feature_names()[i];
}

TEST(Features, NamesAndValuesHaveTheAdvertisedLength) {
  const std::vector<std::string> names = feature_names();
  EXPECT_EQ(names.size(), kNumFeatures);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_GE(kNumFeatures, 40u);
  EXPECT_LE(kNumFeatures, 80u);
  expect_well_formed(kernel_features(lower_matmul(64, 64, 64, {})));
}

TEST(Features, MatmulCountsItsFlopsAndBuffers) {
  std::vector<float> v = kernel_features(lower_matmul(64, 64, 64, {}));
  // 64^3 multiply-adds, each a mul and an add, all in vectors of one zmm (tile_n = 32: two).
  EXPECT_NEAR(feature(v, "flops"), log_scale(2.0 * 64 * 64 * 64), 1e-3);
  EXPECT_NEAR(feature(v, "float_mul"), log_scale(64.0 * 64 * 64), 1e-3);
  EXPECT_NEAR(feature(v, "float_fma"), log_scale(64.0 * 64 * 64), 1e-3);
  EXPECT_EQ(feature(v, "max_lanes"), 16);
  EXPECT_EQ(feature(v, "vector_flop_fraction"), 1);
  // A, B, C and the register tile C.local.
  EXPECT_EQ(feature(v, "num_buffers"), 4);
  EXPECT_EQ(feature(v, "num_allocs"), 1);
  EXPECT_NEAR(feature(v, "local_alloc_bytes"), log_scale(8 * 32 * 4), 1e-3);  // tile_m x tile_n
  // Every input element is read at least once: A, B and C are 16 KiB each.
  EXPECT_NEAR(feature(v, "unique_bytes"), log_scale(3 * 16384 + 8 * 32 * 4), 1e-3);
  // The row tiles (64 / tile_m 8) run in parallel, all the work inside them.
  EXPECT_NEAR(feature(v, "parallel_extent"), log_scale(8), 1e-3);
  EXPECT_EQ(feature(v, "parallel_fraction"), 1);
}

TEST(Features, MatmulKnobsChangeTheFeatures) {
  std::vector<float> base = kernel_features(lower_matmul(64, 64, 64, {}));
  std::vector<float> small_tiles = kernel_features(
      lower_matmul(64, 64, 64, {{"tile_m", 2}, {"tile_n", 16}, {"tile_k", 1}, {"parallel", 0}}));
  EXPECT_NE(base, small_tiles);
  // Same math, another schedule: equal flops, different vectors, no parallelism.
  EXPECT_NEAR(feature(small_tiles, "flops"), feature(base, "flops"), 1e-3);
  EXPECT_EQ(feature(small_tiles, "max_lanes"), 16);
  EXPECT_EQ(feature(small_tiles, "parallel_extent"), 0);
  EXPECT_EQ(feature(small_tiles, "parallel_fraction"), 0);
  // A larger k tile unrolls more multiply-adds into one iteration of the k loop.
  std::vector<float> deep_k = kernel_features(lower_matmul(64, 64, 64, {{"tile_k", 16}}));
  EXPECT_GT(feature(deep_k, "main_stores_per_iteration"),
            feature(base, "main_stores_per_iteration"));
}

TEST(Features, BiggerShapesHaveMoreFlopsAndBytes) {
  std::vector<float> small = kernel_features(lower_matmul(64, 64, 64, {}));
  std::vector<float> big = kernel_features(lower_matmul(256, 128, 128, {}));
  EXPECT_NEAR(feature(big, "flops"), log_scale(2.0 * 256 * 128 * 128), 1e-3);
  for (const char* name : {"flops", "bytes_loaded", "bytes_stored", "unique_bytes"}) {
    EXPECT_GT(feature(big, name), feature(small, name)) << name;
  }
}

TEST(Features, VectorWidthShowsInTheVectorFeatures) {
  ops::OpInstance relu = ops::unary(ops::UnaryOp::kRelu, f32({64, 256}));
  auto features = [&](int64_t width) {
    return kernel_features(ops::lower_op(relu, {{"vector_width", width}, {"parallel", 0}}, "relu"));
  };
  std::vector<float> scalar = features(1), vector = features(8);
  EXPECT_EQ(feature(scalar, "max_lanes"), 1);
  EXPECT_EQ(feature(vector, "max_lanes"), 8);
  EXPECT_EQ(feature(scalar, "vector_flop_fraction"), 0);
  EXPECT_EQ(feature(vector, "vector_flop_fraction"), 1);
  EXPECT_EQ(feature(vector, "vector_access_fraction"), 1);
  // The same elements either way: one max per element.
  EXPECT_NEAR(feature(scalar, "float_minmax"), log_scale(64 * 256), 1e-3);
  EXPECT_NEAR(feature(vector, "float_minmax"), log_scale(64 * 256), 1e-3);
}

TEST(Features, SymbolicDimsTakeTheirValuesFromDimValues) {
  arith::Var m("m");
  tir::LoweredFunc f = lower_matmul(m, 64, 64, {});
  std::vector<float> at_256 = kernel_features(f, {{"m", 256}});
  std::vector<float> at_1024 = kernel_features(f, {{"m", 1024}});
  expect_well_formed(at_256);
  EXPECT_NEAR(feature(at_256, "flops"), log_scale(2.0 * 256 * 64 * 64), 1e-3);
  EXPECT_NEAR(feature(at_1024, "flops"), log_scale(2.0 * 1024 * 64 * 64), 1e-3);
  EXPECT_GT(feature(at_1024, "unique_bytes"), feature(at_256, "unique_bytes"));
  // A dim without a value counts as 64.
  EXPECT_EQ(kernel_features(f), kernel_features(f, {{"m", 64}}));
  EXPECT_NE(kernel_features(f), at_256);
}

// Every product of the knobs' candidates, in order.
std::vector<ops::KnobValues> knob_space(const std::vector<ops::KnobSpec>& specs) {
  std::vector<ops::KnobValues> space{{}};
  for (const ops::KnobSpec& spec : specs) {
    std::vector<ops::KnobValues> next;
    for (const ops::KnobValues& partial : space) {
      for (int64_t value : spec.candidates) {
        ops::KnobValues k = partial;
        k[spec.name] = value;
        next.push_back(std::move(k));
      }
    }
    space = std::move(next);
  }
  return space;
}

// What the tuner does: lower a sample of an op's knob space and describe each kernel.
std::vector<std::vector<float>> sample_features(const ops::OpInstance& op, size_t samples) {
  std::vector<ops::KnobValues> space = knob_space(op.knobs);
  std::vector<std::vector<float>> out;
  const size_t step = std::max<size_t>(1, space.size() / samples);
  for (size_t i = 0; i < space.size() && out.size() < samples; i += step) {
    out.push_back(kernel_features(ops::lower_op(op, space[i], "sample")));
  }
  return out;
}

TEST(Features, MatmulKnobSpaceGivesDistinctVectors) {
  ops::OpInstance op = ops::matmul(f32({64, 64}), f32({64, 64}));
  std::vector<std::vector<float>> rows = sample_features(op, 20);
  ASSERT_EQ(rows.size(), 20u);
  for (const auto& row : rows) expect_well_formed(row);
  std::set<std::vector<float>> distinct(rows.begin(), rows.end());
  EXPECT_GE(distinct.size(), 15u);
}

TEST(Features, ConvKnobSpaceGivesDistinctVectors) {
  // 48 output channels: every oc_block candidate divides them (a block that does not
  // computes a guarded tail, which the flops count includes).
  ops::OpInstance op = ops::conv(f32({1, 16, 18, 18}), f32({48, 16, 3, 3}), std::nullopt);
  std::vector<std::vector<float>> rows = sample_features(op, 12);
  ASSERT_EQ(rows.size(), 12u);
  for (const auto& row : rows) expect_well_formed(row);
  std::set<std::vector<float>> distinct(rows.begin(), rows.end());
  EXPECT_GE(distinct.size(), 8u);
  // 48 x 16 x 16 outputs, 16 x 3 x 3 multiply-adds each, whatever the schedule.
  for (const auto& row : rows) {
    EXPECT_NEAR(feature(row, "flops"), log_scale(2.0 * 48 * 16 * 16 * 16 * 9), 0.05);
  }
}

// for (i, 0, 16): if (i < n) { let j = int64(X[i]) in Y[i] = ... } else ...; a call to a
// region that does not exist; nothing of it may throw or produce a non-finite value.
TEST(Features, HandBuiltTirOfEveryKindIsAccepted) {
  arith::Var n("n"), i("i"), j("j");
  auto x = std::make_shared<const tir::Buffer>("X", vm::DType::kInt64, std::vector<arith::Expr>{n});
  auto y = std::make_shared<const tir::Buffer>("Y", kF32, std::vector<arith::Expr>{n});
  auto tmp = std::make_shared<const tir::Buffer>("T", kF32, std::vector<arith::Expr>{n},
                                                 tir::BufferScope::kWorkspace);
  tir::Expr one = tir::make_const(tir::f32(), 1.0);
  tir::Stmt gather = tir::make_let_index(
      j, tir::buffer_load(x, {i}),
      tir::make_store(y, {i}, tir::call(tir::Intrinsic::kExp, tir::buffer_load(tmp, {j}) + one)));
  tir::Stmt chain = tir::make_if(arith::lt(i, n), gather,
                                 tir::make_if(arith::eq(i, n), tir::make_store(y, {i}, one),
                                              tir::make_store(y, {i}, one * one)));
  tir::LoweredFunc f;
  f.func.name = "hand_built";
  f.func.params = {x, y};
  f.func.num_inputs = 1;
  f.func.body =
      tir::make_allocate(tmp, tir::make_seq({tir::make_for(i, 0, 16, tir::ForKind::kSerial, chain),
                                             tir::make_parallel_call(3, n)}));
  std::vector<float> v = kernel_features(f, {{"n", 16}});
  expect_well_formed(v);
  EXPECT_NEAR(feature(v, "let_indices"), log_scale(16.0 / 3), 1e-3);  // a third of the chain
  EXPECT_NEAR(feature(v, "workspace_alloc_bytes"), log_scale(16 * 4), 1e-3);
  EXPECT_GT(feature(v, "float_math"), 0);
  EXPECT_EQ(feature(v, "parallel_extent"), 0);  // the call's region is missing

  expect_well_formed(kernel_features(tir::LoweredFunc{}));
}

}  // namespace
}  // namespace dynvm::tune
