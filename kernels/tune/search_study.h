// Does the cost model earn its place? Model-guided search against random search, compared
// without the machine's noise deciding the answer.
//
// Two tuning runs measured one after the other on a shared machine disagree by more than
// the two searches differ (up to 12% between runs for the same default schedule), so
// comparing two vmtune runs said nothing. Here every configuration of a workload's space is
// measured once (measure_space), and each search is then replayed against that table
// (replay_searches): the tuner runs unchanged, with a measurer that answers from the table
// (TuneOptions::measurer). Both searches see the very same costs, so the only difference
// between them is the order in which they ask, and each is replayed with several seeds
// (their random draws) to give a distribution rather than one lucky run.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/tune/tuner.h"

namespace dynvm::tune {

// Every configuration of `w`'s knob space, measured in batches of `batch` in a seeded
// shuffled order (progress after each batch with the number measured so far). One
// Measurement per index.
std::vector<Measurement> measure_space(const Workload& w, const MeasureOptions& options,
                                       int batch = 8,
                                       const std::function<void(uint64_t done)>& progress = {});

// One search's replays: per trial, the best configuration found so far as a share of the
// table's best throughput (best_ns / best so far: 1 once it is found), averaged over seeds,
// and per seed the trial at which it first came within `target` of the best (0: never).
struct SearchCurve {
  std::vector<double> quality;
  std::vector<int> trials_to_target;
};

struct SearchStudy {
  uint64_t space = 0;     // configurations
  int measured = 0;       // of them, measured without an error
  double best_ns = 0;     // the table's best
  double default_ns = 0;  // the default schedule's
  SearchCurve model, random;
};

struct StudyOptions {
  int trials = 32;  // per replay (at most the space's size)
  int seeds = 20;
  int batch = 8;
  double exploration = 0.25;
  double target = 0.95;              // "within 95% of the best throughput"
  const CostModel* prior = nullptr;  // as TuneOptions::prior, for the model search
};

// Replays both searches against `table` (measure_space's result for `w`). Throws a
// UserError when the table holds no measured configuration.
SearchStudy replay_searches(const Workload& w, const std::vector<Measurement>& table,
                            const StudyOptions& options);

// The median of a search's trials to the target over its seeds, counting a seed that never
// got there as one past the budget; and how many seeds got there.
double median_trials(const SearchCurve& c, int budget);
int seeds_reaching(const SearchCurve& c);

}  // namespace dynvm::tune
