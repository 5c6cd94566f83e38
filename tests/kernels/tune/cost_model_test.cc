// CostModel on synthetic tasks whose score is a known monotone function of two features plus
// noise: after training, its ranking of held-out candidates must agree with the truth.
// Also the untrained model, save / load round trips and corrupt model bytes.
#include "kernels/tune/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/tune/features.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::tune {
namespace {

struct Dataset {
  std::vector<std::vector<float>> features;
  std::vector<double> truth;  // the noise-free score
  std::vector<double> score;  // what a measurement would report
  std::vector<int64_t> group;
};

// Rows of random features; the score grows with features 3 and 7 (and ignores the rest),
// scaled per task (the model must only rank within a task), with 5% multiplicative noise.
Dataset synthetic(size_t rows, int64_t task, double task_scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(0.0f, 10.0f);
  std::normal_distribution<double> noise(0.0, 0.05);
  Dataset d;
  for (size_t r = 0; r < rows; ++r) {
    std::vector<float> f(kNumFeatures);
    for (float& x : f) x = value(rng);
    const double truth = task_scale * std::exp(0.3 * f[3]) * (1.0 + f[7]);
    d.features.push_back(std::move(f));
    d.truth.push_back(truth);
    d.score.push_back(truth * (1.0 + noise(rng)));
    d.group.push_back(task);
  }
  return d;
}

// Kendall's tau-a: agreeing minus disagreeing pairs over all pairs.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  double concordant = 0, discordant = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double s = (a[i] - a[j]) * (b[i] - b[j]);
      if (s > 0) ++concordant;
      if (s < 0) ++discordant;
    }
  }
  const double pairs = static_cast<double>(a.size() * (a.size() - 1) / 2);
  return (concordant - discordant) / pairs;
}

// Three tasks of very different throughput, their rows interleaved as a tuner would log them.
Dataset training_set(std::mt19937& rng) {
  Dataset parts[] = {synthetic(120, 0, 1.0, rng), synthetic(120, 1, 1000.0, rng),
                     synthetic(120, 2, 0.01, rng)};
  Dataset all;
  for (size_t r = 0; r < 120; ++r) {
    for (const Dataset& p : parts) {
      all.features.push_back(p.features[r]);
      all.truth.push_back(p.truth[r]);
      all.score.push_back(p.score[r]);
      all.group.push_back(p.group[r]);
    }
  }
  return all;
}

TEST(CostModel, UntrainedPredictsZeros) {
  CostModel model;
  EXPECT_FALSE(model.trained());
  std::mt19937 rng(1);
  Dataset d = synthetic(5, 0, 1.0, rng);
  EXPECT_EQ(model.predict(d.features), std::vector<double>(5, 0.0));
  EXPECT_TRUE(model.save().empty());
  // Too few rows to learn from: still untrained.
  model.fit(d.features, d.score, d.group);
  EXPECT_FALSE(model.trained());
  EXPECT_EQ(model.predict(d.features), std::vector<double>(5, 0.0));
}

TEST(CostModel, RanksHeldOutCandidatesLikeTheTruth) {
  std::mt19937 rng(7);
  Dataset train = training_set(rng);
  CostModel model;
  model.fit(train.features, train.score, train.group);
  ASSERT_TRUE(model.trained());
  Dataset held_out = synthetic(80, 0, 1.0, rng);
  std::vector<double> predicted = model.predict(held_out.features);
  ASSERT_EQ(predicted.size(), held_out.features.size());
  EXPECT_GT(kendall_tau(predicted, held_out.truth), 0.8);
  // A task the model never saw, at another scale: only the order matters.
  Dataset unseen = synthetic(80, 9, 1e6, rng);
  EXPECT_GT(kendall_tau(model.predict(unseen.features), unseen.truth), 0.8);
}

TEST(CostModel, SaveLoadPredictsIdentically) {
  std::mt19937 rng(3);
  Dataset train = training_set(rng);
  CostModel model;
  model.fit(train.features, train.score, train.group);
  std::vector<uint8_t> bytes = model.save();
  ASSERT_FALSE(bytes.empty());
  CostModel loaded = CostModel::load(bytes);
  ASSERT_TRUE(loaded.trained());
  Dataset probe = synthetic(50, 0, 1.0, rng);
  EXPECT_EQ(loaded.predict(probe.features), model.predict(probe.features));
  EXPECT_EQ(loaded.save(), bytes);
  // Moving keeps the booster.
  CostModel moved = std::move(loaded);
  EXPECT_TRUE(moved.trained());
  EXPECT_EQ(moved.predict(probe.features), model.predict(probe.features));
  // Empty bytes are the untrained model that save() writes.
  EXPECT_FALSE(CostModel::load({}).trained());
}

TEST(CostModel, CorruptBytesAreAUserError) {
  auto expect_one_line_error = [](const std::vector<uint8_t>& bytes) {
    try {
      CostModel::load(bytes);
      ADD_FAILURE() << "loading " << bytes.size() << " corrupt bytes succeeded";
    } catch (const UserError& e) {
      std::string message = e.what();
      EXPECT_NE(message.find("cost model"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  };
  std::vector<uint8_t> garbage(200);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 37 + 11);
  expect_one_line_error(garbage);
  garbage[0] = '{';  // past the first check, into XGBoost's UBJSON reader
  expect_one_line_error(garbage);
  for (uint8_t& b : garbage) b = '{';
  expect_one_line_error(garbage);
  expect_one_line_error({'{', '"', 'l'});  // truncated JSON
  expect_one_line_error({'{', '}'});       // JSON, but no model

  std::mt19937 rng(5);
  Dataset train = training_set(rng);
  CostModel model;
  model.fit(train.features, train.score, train.group);
  std::vector<uint8_t> bytes = model.save();
  expect_one_line_error(std::vector<uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
}

TEST(CostModel, RowsOfOneGroupNeedNotBeContiguous) {
  std::mt19937 rng(11);
  Dataset train = training_set(rng);  // interleaved groups
  Dataset sorted;
  for (int64_t g = 0; g < 3; ++g) {
    for (size_t i = 0; i < train.group.size(); ++i) {
      if (train.group[i] != g) continue;
      sorted.features.push_back(train.features[i]);
      sorted.score.push_back(train.score[i]);
      sorted.group.push_back(g);
    }
  }
  CostModel a, b;
  a.fit(train.features, train.score, train.group);
  b.fit(sorted.features, sorted.score, sorted.group);
  Dataset probe = synthetic(30, 0, 1.0, rng);
  EXPECT_EQ(a.predict(probe.features), b.predict(probe.features));
}

}  // namespace
}  // namespace dynvm::tune
