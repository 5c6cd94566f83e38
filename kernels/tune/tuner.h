// The search: for each workload, batches of schedule candidates measured (measure.h),
// chosen by an XGBoost cost model (cost_model.h) trained on every measurement so far, of
// this workload and the ones before it, on features of the lowered kernels (features.h).
// The model ranks the whole knob space when it is small, and guides simulated annealing
// over it when it is not; a share of each batch is drawn at random (exploration), and the
// first batch of a workload always holds its default schedule. Every measurement is
// appended to the records file as it comes, and the records a previous run left for a
// workload count as its first trials, so an interrupted run resumes where it stopped.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/tune/cost_model.h"
#include "kernels/tune/measure.h"
#include "kernels/tune/rank.h"
#include "kernels/tune/records.h"

namespace dynvm::tune {

enum class SearchKind : uint8_t { kModel, kRandom };

// Measures a batch of candidates of a workload, one Measurement each, in order.
using Measurer =
    std::function<std::vector<Measurement>(const Workload&, const std::vector<ops::KnobValues>&)>;

struct TuneOptions {
  int trials = 64;            // measured candidates per workload (fewer when its space is smaller)
  int batch = 8;              // candidates per library build and measuring process
  double exploration = 0.25;  // share of a model-chosen batch drawn at random instead
  SearchKind search = SearchKind::kModel;
  uint64_t seed = 1;
  MeasureOptions measure;
  // Empty: measure.h's measure() with `measure`. A search study replays a table measured
  // once instead (search_study.h).
  Measurer measurer;
  // Where the lowered configurations' features are kept across tune() calls of one workload
  // at the same sizes (a search study's replays); null: per call.
  FeatureTable* features = nullptr;
  std::string records_path;  // appended to; empty: records are kept in memory only
  // Ranks the first batch of each workload until this run's own measurements train a model
  // (the model that ships with dynvm, shipped_model.h); null or untrained: random.
  const CostModel* prior = nullptr;
  // Every measured (candidate, size), resumed ones included, appended as a training row
  // (training_rows.h); empty: none written.
  std::string rows_path;
};

// Where a workload's search stands, after each batch (for progress displays).
struct TuneProgress {
  const Workload* workload = nullptr;
  int trials = 0;         // measured so far, resumed ones included
  int budget = 0;         // trials this workload gets
  double best_ns = 0;     // best cost so far (0: none yet)
  double default_ns = 0;  // the default schedule's cost (0: not measured yet)
};

struct TuneResult {
  ops::KnobValues best;  // the default schedule's knobs when nothing beat it
  double best_ns = 0;    // 0 when nothing could be measured
  double default_ns = 0;
  std::vector<double> ns_at_best;     // per size of the workload, the chosen candidate's times
  std::vector<double> ns_at_default;  // and the default schedule's
  int trials = 0;                     // including resumed ones
  int errors = 0;
  std::vector<double> best_so_far;    // best cost after each trial, in order
  std::vector<Measurement> measured;  // this run's and the resumed ones
};

class Tuner {
 public:
  // `previous`: records of earlier runs (read_records); those for the same target resume.
  Tuner(TuneOptions options, std::vector<TuningRecord> previous = {});
  ~Tuner();
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  TuneResult tune(const Workload& w, const std::function<void(const TuneProgress&)>& progress = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The dims of `w`'s symbolic arguments at one of its sizes: each input dim that is a bare
// variable named to its value there (what features.h evaluates extents with).
std::map<std::string, int64_t> dim_values(const Workload& w, const vm::ArgShapes& args);

// The record of measurement `m` of `w` made on `target` (what the records file holds).
TuningRecord record_of(const Workload& w, const std::string& target, const Measurement& m);

}  // namespace dynvm::tune
