// The tuner's cost model: gradient-boosted trees (XGBoost, through its C API) that rank
// candidate schedules of one task from their kernel_features (features.h), trained on the
// throughput measured so far. As in AutoTVM, it learns a ranking (rank:pairwise), not a
// time: the search only needs to know which candidates are worth measuring next.
// XGBoost stays behind this header: nothing that includes it sees the C API.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace dynvm::tune {

class CostModel {
 public:
  CostModel();  // untrained
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Trains a fresh booster on rows of kNumFeatures-length features; `score` is the measured
  // throughput (higher is better, e.g. GFLOP/s or 1/seconds; 0 for a failed measurement);
  // `group[i]` names the task row i belongs to (in any order). Scores are normalised to
  // [0, 1] within each group (divided by the group's best) and used as relevance labels.
  // With fewer than kMinTrainingRows rows the model is left untrained.
  void fit(const std::vector<std::vector<float>>& features, const std::vector<double>& score,
           const std::vector<int64_t>& group);
  bool trained() const { return booster_ != nullptr; }

  // Higher is better; only the order within one task matters. Untrained: all zeros.
  // Thread safe: calls on one model are serialized (XGBoost does not promise that
  // prediction through one booster is).
  std::vector<double> predict(const std::vector<std::vector<float>>& features) const;

  // The booster in XGBoost's UBJSON format; empty for an untrained model.
  std::vector<uint8_t> save() const;
  // The model save() wrote (empty bytes: an untrained model); UserError on bytes that are
  // not such a model.
  static CostModel load(const std::vector<uint8_t>& bytes);

  static constexpr size_t kMinTrainingRows = 8;
  static constexpr int kBoostingRounds = 150;

 private:
  struct BoosterDeleter {
    void operator()(void* booster) const;
  };
  std::unique_ptr<void, BoosterDeleter> booster_;
  std::unique_ptr<std::mutex> predicting_ = std::make_unique<std::mutex>();
};

}  // namespace dynvm::tune
