// CostModel over XGBoost's C API. Every call's status is checked: a failure is an internal
// error carrying XGBGetLastError()'s first line, except when loading bytes, where it is the
// user's file that is wrong.
#include "kernels/tune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "kernels/tune/features.h"
#include "vm/error.h"

namespace dynvm::tune {
namespace {

// XGBoost's messages carry a timestamp, a source location and sometimes a stack trace on
// later lines; dynvm's errors are one line.
std::string last_error() {
  std::string msg = XGBGetLastError();
  msg = msg.substr(0, msg.find('\n'));
  if (!msg.empty() && msg.front() == '[') {
    // "[12:00:00] ../src/learner.cc:123: what went wrong"
    size_t colon = msg.find(": ", msg.find(']'));
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
  }
  return msg;
}

#define DYNVM_XGB_CHECK(call) DYNVM_INTERNAL_CHECK((call) == 0, "XGBoost: ", last_error())

// Silences XGBoost's own logging (warnings about parameters, progress) once per process: the
// tuner prints its own progress and runs beside measurements.
void configure_xgboost() {
  static std::once_flag once;
  std::call_once(once, [] { DYNVM_XGB_CHECK(XGBSetGlobalConfig(R"({"verbosity": 0})")); });
}

struct DMatrixDeleter {
  void operator()(void* m) const { XGDMatrixFree(m); }
};
using DMatrix = std::unique_ptr<void, DMatrixDeleter>;

// Rows of kNumFeatures floats, in the order given.
DMatrix make_dmatrix(const std::vector<const std::vector<float>*>& rows) {
  std::vector<float> data;
  data.reserve(rows.size() * kNumFeatures);
  for (const std::vector<float>* row : rows) {
    DYNVM_INTERNAL_CHECK(row->size() == kNumFeatures, "cost model: a feature row has ", row->size(),
                         " values, not ", kNumFeatures);
    data.insert(data.end(), row->begin(), row->end());
  }
  DMatrixHandle handle = nullptr;
  // NaN marks missing values; kernel_features never produces one, so every value is present.
  DYNVM_XGB_CHECK(XGDMatrixCreateFromMat_omp(data.data(), rows.size(), kNumFeatures, NAN, &handle,
                                             /*nthread=*/1));
  return DMatrix(handle);
}

// The training parameters (README.md says why these).
void set_params(BoosterHandle booster) {
  static constexpr std::pair<const char*, const char*> kParams[] = {
      {"objective", "rank:pairwise"},
      {"booster", "gbtree"},
      {"tree_method", "exact"},
      {"max_depth", "6"},
      {"eta", "0.1"},
      {"gamma", "0.0001"},
      {"min_child_weight", "1"},
      {"subsample", "1.0"},
      {"lambda", "1"},
      {"nthread", "1"},
      {"seed", "0"},
      {"verbosity", "0"},
  };
  for (const auto& [name, value] : kParams)
    DYNVM_XGB_CHECK(XGBoosterSetParam(booster, name, value));
}

}  // namespace

void CostModel::BoosterDeleter::operator()(void* booster) const { XGBoosterFree(booster); }

CostModel::CostModel() { configure_xgboost(); }
CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

void CostModel::fit(const std::vector<std::vector<float>>& features,
                    const std::vector<double>& score, const std::vector<int64_t>& group) {
  DYNVM_INTERNAL_CHECK(features.size() == score.size() && features.size() == group.size(),
                       "cost model: ", features.size(), " rows, ", score.size(), " scores, ",
                       group.size(), " group ids");
  booster_.reset();
  if (features.size() < kMinTrainingRows) return;

  // XGBoost's ranking wants each group's rows contiguous: order rows by group, groups in
  // order of first appearance, rows within a group as given.
  std::unordered_map<int64_t, size_t> group_rank;
  for (int64_t g : group) group_rank.emplace(g, group_rank.size());
  std::vector<size_t> order(features.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return group_rank[group[a]] < group_rank[group[b]]; });

  // Labels: each score over its group's best, so that every task weighs alike. Failed or
  // meaningless measurements (negative, NaN) rank last.
  auto clean = [](double s) { return std::isfinite(s) && s > 0 ? s : 0.0; };
  std::vector<double> best(group_rank.size(), 0.0);
  for (size_t i = 0; i < score.size(); ++i) {
    double& b = best[group_rank[group[i]]];
    b = std::max(b, clean(score[i]));
  }
  std::vector<const std::vector<float>*> rows;
  std::vector<float> labels;
  std::vector<unsigned> group_sizes(group_rank.size(), 0);
  for (size_t i : order) {
    const size_t g = group_rank[group[i]];
    rows.push_back(&features[i]);
    labels.push_back(best[g] > 0 ? static_cast<float>(clean(score[i]) / best[g]) : 0.0f);
    ++group_sizes[g];
  }

  DMatrix train = make_dmatrix(rows);
  DYNVM_XGB_CHECK(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), labels.size()));
  DYNVM_XGB_CHECK(
      XGDMatrixSetUIntInfo(train.get(), "group", group_sizes.data(), group_sizes.size()));
  DMatrixHandle cache[] = {train.get()};
  BoosterHandle handle = nullptr;
  DYNVM_XGB_CHECK(XGBoosterCreate(cache, 1, &handle));
  std::unique_ptr<void, BoosterDeleter> booster(handle);
  set_params(handle);
  for (int round = 0; round < kBoostingRounds; ++round) {
    DYNVM_XGB_CHECK(XGBoosterUpdateOneIter(handle, round, train.get()));
  }
  booster_ = std::move(booster);
}

std::vector<double> CostModel::predict(const std::vector<std::vector<float>>& features) const {
  if (!booster_ || features.empty()) return std::vector<double>(features.size(), 0.0);
  std::vector<const std::vector<float>*> rows;
  for (const std::vector<float>& row : features) rows.push_back(&row);
  DMatrix data = make_dmatrix(rows);
  const char* config = R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0,)"
                       R"( "strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  std::lock_guard<std::mutex> lock(*predicting_);
  DYNVM_XGB_CHECK(
      XGBoosterPredictFromDMatrix(booster_.get(), data.get(), config, &shape, &dim, &result));
  bst_ulong n = 1;
  for (bst_ulong d = 0; d < dim; ++d) n *= shape[d];
  DYNVM_INTERNAL_CHECK(n == features.size(), "XGBoost predicted ", n, " values for ",
                       features.size(), " rows");
  return std::vector<double>(result, result + n);
}

std::vector<uint8_t> CostModel::save() const {
  if (!booster_) return {};
  bst_ulong len = 0;
  const char* data = nullptr;
  DYNVM_XGB_CHECK(XGBoosterSaveModelToBuffer(booster_.get(), R"({"format": "ubj"})", &len, &data));
  return std::vector<uint8_t>(data, data + len);
}

CostModel CostModel::load(const std::vector<uint8_t>& bytes) {
  CostModel model;
  if (bytes.empty()) return model;
  // save() writes UBJSON, an object ('{'); anything else would reach XGBoost's legacy binary
  // reader, which trusts the lengths it reads from the bytes.
  if (bytes.front() != '{') {
    user_error("cost model: ", bytes.size(), " bytes are not an XGBoost model (not UBJSON)");
  }
  BoosterHandle handle = nullptr;
  DYNVM_XGB_CHECK(XGBoosterCreate(nullptr, 0, &handle));
  std::unique_ptr<void, BoosterDeleter> booster(handle);
  if (XGBoosterLoadModelFromBuffer(handle, bytes.data(), bytes.size()) != 0) {
    user_error("cost model: ", bytes.size(), " bytes are not an XGBoost model (", last_error(),
               ")");
  }
  bst_ulong num_features = 0;
  if (XGBoosterGetNumFeature(handle, &num_features) != 0 || num_features != kNumFeatures) {
    user_error("cost model: the model has ", num_features, " features, this dynvm computes ",
               kNumFeatures);
  }
  set_params(handle);
  model.booster_ = std::move(booster);
  return model;
}

}  // namespace dynvm::tune
