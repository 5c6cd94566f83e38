// Ranking without measuring (rank.h): the sizes a symbolic kernel is scored at, the choice
// a model trained on a known preference makes, the defaults without a model, the model
// that ships with dynvm, and the training rows it is made from (training_rows.h).
#include "kernels/tune/rank.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/ops/matmul.h"
#include "kernels/tune/features.h"
#include "kernels/tune/shipped_model.h"
#include "kernels/tune/training_rows.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::tune {
namespace {

const ops::TensorType kA{vm::DType::kFloat32, {arith::Var("n"), arith::make_int(64)}};
const ops::TensorType kB{vm::DType::kFloat32, {arith::make_int(64), arith::make_int(128)}};

TEST(NominalSizes, EveryVariableAtEachNominalValue) {
  const ops::TensorType batch{vm::DType::kFloat32,
                              {arith::Var("b"), arith::make_int(3), arith::Var("w")}};
  const ops::TensorType lengths{vm::DType::kInt64, {arith::Var("n")}};
  const std::vector<SizePoint> points = nominal_sizes({batch, lengths});
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].dims, (std::map<std::string, int64_t>{{"b", 10}, {"n", 10}, {"w", 10}}));
  EXPECT_EQ(points[2].dims, (std::map<std::string, int64_t>{{"b", 250}, {"n", 250}, {"w", 250}}));
  // Static kernels: one point, no dims.
  const std::vector<SizePoint> fixed = nominal_sizes({kB});
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_TRUE(fixed[0].dims.empty());
}

TEST(NominalSizes, DoubledUntilNoDimIsEmpty) {
  // A window of 256 with stride 128 over w + 64 (Silero's STFT convolution): at w = 10
  // the output would have (74 - 256) floordiv 128 + 1 = -1 columns.
  const arith::Var w("w");
  const arith::Expr padded = arith::make_binary(arith::ExprKind::kAdd, w, arith::make_int(64));
  const arith::Expr out = arith::make_binary(
      arith::ExprKind::kAdd,
      arith::make_binary(arith::ExprKind::kFloorDiv,
                         arith::make_binary(arith::ExprKind::kSub, padded, arith::make_int(256)),
                         arith::make_int(128)),
      arith::make_int(1));
  const ops::TensorType x{vm::DType::kFloat32, {arith::make_int(1), padded}};
  const ops::TensorType y{vm::DType::kFloat32, {arith::make_int(258), out}};
  const std::vector<SizePoint> points = nominal_sizes({x, y});
  ASSERT_EQ(points.size(), 3u);
  // 10 -> 320 (out 2), 50 -> 200 (out 1), 250 stays (out 1).
  EXPECT_EQ(points[0].dims.at("w"), 320);
  EXPECT_EQ(points[1].dims.at("w"), 200);
  EXPECT_EQ(points[2].dims.at("w"), 250);
}

TEST(RankSchedule, AnUntrainedModelKeepsTheDefaults) {
  const ops::OpInstance op = ops::matmul(kA, kB);
  const KnobSpace space(op.knobs);
  EXPECT_EQ(rank_schedule(op, nominal_sizes({kA, kB}), CostModel()),
            space.at(space.default_index()));
}

// A model taught that wide column tiles are fast: tile_n = 64 scores ten times the rest, on
// the features of every configuration of each op at its nominal sizes.
CostModel prefers_wide_tiles(const std::vector<ops::OpInstance>& ops,
                             const std::vector<std::vector<SizePoint>>& sizes) {
  std::vector<std::vector<float>> rows;
  std::vector<double> score;
  std::vector<int64_t> group;
  for (size_t o = 0; o < ops.size(); ++o) {
    ConfigScorer scorer(ops[o], sizes[o]);
    const KnobSpace& space = scorer.space();
    for (uint64_t i = 0; i < space.size(); ++i) {
      const auto& f = scorer.features(i);
      if (!f) continue;
      for (size_t s = 0; s < sizes[o].size(); ++s) {
        rows.push_back((*f)[s]);
        score.push_back(space.at(i).at("tile_n") == 64 ? 10.0 : 1.0);
        group.push_back(static_cast<int64_t>(o * 16 + s));
      }
    }
  }
  CostModel model;
  model.fit(rows, score, group);
  return model;
}

TEST(RankSchedule, TheConfigurationATrainedModelPrefersWins) {
  const ops::OpInstance op = ops::matmul(kA, kB);
  const std::vector<SizePoint> sizes = nominal_sizes({kA, kB});
  const CostModel model = prefers_wide_tiles({op}, {sizes});
  ASSERT_TRUE(model.trained());
  ConfigScorer scorer(op, sizes);
  const KnobSpace& space = scorer.space();
  ASSERT_NE(space.at(space.default_index()).at("tile_n"), 64);
  EXPECT_EQ(rank_schedule(op, sizes, model).at("tile_n"), 64);
  ops::KnobValues wide = space.at(space.default_index());
  wide["tile_n"] = 64;
  EXPECT_GT(scorer.predicted(model, space.index_of(wide)),
            scorer.predicted(model, space.default_index()));
  // A fixed knob keeps its default, whatever the model thinks of it.
  EXPECT_EQ(rank_schedule(op, sizes, model, {"tile_n"}).at("tile_n"),
            space.at(space.default_index()).at("tile_n"));
  // So does everything when the model is not sure enough.
  EXPECT_EQ(rank_schedule(op, sizes, model, {}, 1e9), space.at(space.default_index()));
}

// ranked_schedule (what the compiler calls) ranks kernels with a large argument and leaves
// those whose arguments are all small (symbolic dims at 250) at their defaults, whatever
// the model prefers.
TEST(RankedSchedule, SmallStaticKernelsKeepTheirDefaults) {
  const ops::TensorType wide_a{vm::DType::kFloat32, {arith::Var("n"), arith::make_int(128)}};
  const ops::TensorType square{vm::DType::kFloat32, {arith::make_int(128), arith::make_int(128)}};
  const ops::TensorType small_a{vm::DType::kFloat32, {arith::make_int(8), arith::make_int(64)}};
  ASSERT_GE(250 * 128, kMinRankedElements);  // wide_a at the largest nominal size
  ASSERT_LT(64 * 128, kMinRankedElements);   // every argument of the small product
  const ops::OpInstance large = ops::matmul(wide_a, square);
  const ops::OpInstance small = ops::matmul(small_a, kB);
  const CostModel model = prefers_wide_tiles(
      {large, small}, {nominal_sizes({wide_a, square}), nominal_sizes({small_a, kB})});
  EXPECT_EQ(ranked_schedule(large, {wide_a, square}, model).at("tile_n"), 64);
  const KnobSpace space(small.knobs);
  EXPECT_EQ(ranked_schedule(small, {small_a, kB}, model), space.at(space.default_index()));
}

TEST(ShippedModel, IsTrainedOnThisVersionsFeaturesAndRanksARealKernel) {
  const CostModel& model = shipped_cost_model();
  ASSERT_TRUE(model.trained()) << "kernels/tune/db/cost_model.ubj is missing or empty";
  // load() refuses a model of another feature count: a stale model fails here.
  const std::vector<double> p = model.predict({std::vector<float>(kNumFeatures, 1.0f)});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(std::isfinite(p[0]));
  const ops::OpInstance op = ops::matmul(kA, kB);
  const ops::KnobValues chosen = ranked_schedule(op, {kA, kB});
  const KnobSpace space(op.knobs);
  EXPECT_NO_THROW(space.index_of(chosen));           // a configuration of the template
  EXPECT_EQ(ranked_schedule(op, {kA, kB}), chosen);  // the same answer every time
}

class TrainingRowsFile : public ::testing::Test {
 protected:
  std::string path(const std::string& name) {
    const std::string p = ::testing::TempDir() + "rank_test_" + name;
    std::filesystem::remove(p);
    return p;
  }
};

TEST_F(TrainingRowsFile, RoundTripAndTasksMatchedAcrossFiles) {
  const std::string a = path("a.rows"), b = path("b.rows");
  std::vector<float> f(kNumFeatures);
  for (size_t i = 0; i < f.size(); ++i) f[i] = 0.25f * static_cast<float>(i);
  append_training_row(a, "conv @ 1x3", 10.5, f);
  append_training_row(a, "matmul @ 8", 2, f);
  append_training_row(b, "conv @ 1x3", 7, f);
  const TrainingRows rows = read_training_rows({a, b});
  ASSERT_EQ(rows.features.size(), 3u);
  EXPECT_EQ(rows.tasks, 2u);
  EXPECT_EQ(rows.group, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(rows.score, (std::vector<double>{10.5, 2, 7}));
  EXPECT_EQ(rows.features[2], f);
}

TEST_F(TrainingRowsFile, DamageIsNamedWithFileAndLine) {
  const std::string p = path("bad.rows");
  append_training_row(p, "ok", 1, std::vector<float>(kNumFeatures, 1.0f));
  std::ofstream(p, std::ios::app) << "task\t1\t1,2,3\n";
  EXPECT_USER_ERROR(read_training_rows({p}), ":2: 3 features where this dynvm computes");
  const std::string q = path("worse.rows");
  std::ofstream(q) << "no tabs here\n";
  EXPECT_USER_ERROR(read_training_rows({q}), ":1: not a training row");
  const std::string r = path("score.rows");
  std::string ones = "1";
  for (size_t i = 1; i < kNumFeatures; ++i) ones += ",1";
  std::ofstream(r) << "task\tfast\t" << ones << "\n";
  EXPECT_USER_ERROR(read_training_rows({r}), "not a training row");
  EXPECT_USER_ERROR(read_training_rows({path("missing.rows")}), "cannot open");
}

}  // namespace
}  // namespace dynvm::tune
