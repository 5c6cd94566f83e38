#include "tools/vmtune/search_study_run.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "kernels/tune/knob_space.h"
#include "kernels/tune/records.h"
#include "kernels/tune/search_study.h"
#include "tools/progress_line.h"
#include "vm/error.h"

namespace dynvm::vmtune {
namespace {

// The trial counts the curves are printed at: 1, 2, 4, ... up to the budget.
std::vector<int> curve_points(int budget) {
  std::vector<int> points;
  for (int t = 1; t < budget; t *= 2) points.push_back(t);
  points.push_back(budget);
  return points;
}

std::string curve_str(const tune::SearchCurve& c, const std::vector<int>& points) {
  std::string out;
  for (int t : points) {
    char cell[16];
    std::snprintf(cell, sizeof(cell), "%s%.3f", out.empty() ? "" : " ",
                  c.quality.at(static_cast<size_t>(t - 1)));
    out += cell;
  }
  return out;
}

std::string trials_str(const tune::SearchCurve& c, int budget) {
  char cell[32];
  std::snprintf(cell, sizeof(cell), "%g (%d/%zu)", tune::median_trials(c, budget),
                tune::seeds_reaching(c), c.trials_to_target.size());
  return cell;
}

}  // namespace

int run_search_study(const std::vector<tune::Workload>& workloads, const Options& o, bool chatty) {
  tools::ProgressLine line(chatty);
  const std::string target = o.tune.measure.target.description();
  tune::StudyOptions study;
  study.trials = o.tune.trials;
  study.seeds = o.study_seeds;
  study.batch = o.tune.batch;
  study.exploration = o.tune.exploration;
  study.prior = o.tune.prior;
  std::printf(
      "search study: every configuration measured once, then each search replayed %d times "
      "(seeds) against those costs, %d trials each (batches of %d)\n",
      study.seeds, study.trials, study.batch);
  std::string at;
  for (int t : curve_points(study.trials)) at += " " + std::to_string(t);
  std::printf("%-28s %7s %10s %10s  %-20s %-20s  %s\n", "kernel", "configs", "default us",
              "best us", "to 95%: model", "random",
              ("best so far / best (model | random) at trials" + at).c_str());
  int model_wins = 0, random_wins = 0, compared = 0;
  for (size_t i = 0; i < workloads.size(); ++i) {
    const tune::Workload& w = workloads[i];
    const uint64_t configs = tune::KnobSpace(w.build(w.arg_types).knobs).size();
    if (configs > o.study_max_space || configs < 2) {
      std::printf("%-28.28s %7llu  (left out: %s)\n", w.name.c_str(),
                  static_cast<unsigned long long>(configs),
                  configs < 2 ? "nothing to search" : "over --study-max-space");
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<tune::Measurement> table =
        tune::measure_space(w, o.tune.measure, o.tune.batch, [&](uint64_t done) {
          line.show(str_cat("vmtune: [", i + 1, "/", workloads.size(), "] ", w.name, "  measured ",
                            done, "/", configs));
        });
    for (const tune::Measurement& m : table)
      tune::append_record(o.output, tune::record_of(w, target, m));
    line.show(str_cat("vmtune: [", i + 1, "/", workloads.size(), "] ", w.name, "  replaying"));
    const tune::SearchStudy s = tune::replay_searches(w, table, study);
    line.clear();
    const int budget = static_cast<int>(std::min<uint64_t>(configs, study.trials));
    const double m = tune::median_trials(s.model, budget),
                 r = tune::median_trials(s.random, budget);
    ++compared;
    model_wins += m < r;
    random_wins += r < m;
    const std::vector<int> points = curve_points(budget);
    std::printf("%-28.28s %7llu %10.1f %10.1f  %-20s %-20s  %s | %s  (%.0f s)\n", w.name.c_str(),
                static_cast<unsigned long long>(configs), s.default_ns / 1e3, s.best_ns / 1e3,
                trials_str(s.model, budget).c_str(), trials_str(s.random, budget).c_str(),
                curve_str(s.model, points).c_str(), curve_str(s.random, points).c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf(
      "to 95%% of the best (median trials over seeds; seeds that got there): model fewer on "
      "%d of %d kernels, random fewer on %d\n",
      model_wins, compared, random_wins);
  return 0;
}

}  // namespace dynvm::vmtune
