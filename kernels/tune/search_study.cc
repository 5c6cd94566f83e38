#include "kernels/tune/search_study.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "kernels/tune/knob_space.h"
#include "vm/error.h"

namespace dynvm::tune {

std::vector<Measurement> measure_space(const Workload& w, const MeasureOptions& options,
                                       int batch,
                                       const std::function<void(uint64_t done)>& progress) {
  const KnobSpace space(w.build(w.arg_types).knobs);
  // In a shuffled order: a machine that gets busier halfway through then slows a random
  // half of the space, not the configurations of the last indices (a knob's values).
  std::vector<uint64_t> order(space.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(1);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<Measurement> table(space.size());
  const size_t step = static_cast<size_t>(std::max(batch, 1));
  for (size_t first = 0; first < order.size(); first += step) {
    const size_t last = std::min(order.size(), first + step);
    std::vector<ops::KnobValues> candidates;
    for (size_t k = first; k < last; ++k) candidates.push_back(space.at(order[k]));
    std::vector<Measurement> ms = measure(w, candidates, options);
    for (size_t k = first; k < last; ++k) table[order[k]] = std::move(ms[k - first]);
    if (progress) progress(last);
  }
  return table;
}

namespace {

// One replay of one search: the tuner as vmtune runs it, measuring from the table.
TuneResult replay(const Workload& w, const KnobSpace& space, const std::vector<Measurement>& table,
                  const StudyOptions& o, SearchKind kind, uint64_t seed, FeatureTable& features) {
  TuneOptions t;
  t.trials = o.trials;
  t.batch = o.batch;
  t.exploration = o.exploration;
  t.search = kind;
  t.seed = seed;
  t.prior = kind == SearchKind::kModel ? o.prior : nullptr;
  t.features = &features;
  t.measurer = [&](const Workload&, const std::vector<ops::KnobValues>& candidates) {
    std::vector<Measurement> out;
    for (const ops::KnobValues& c : candidates) out.push_back(table.at(space.index_of(c)));
    return out;
  };
  Tuner tuner(t);
  return tuner.tune(w);
}

void add_replay(SearchCurve& curve, const TuneResult& r, double best_ns, double target,
                int budget) {
  curve.quality.resize(static_cast<size_t>(budget), 0.0);
  int reached = 0;
  for (int i = 0; i < budget; ++i) {
    // A replay stops early only when the space is exhausted: its best holds from there on.
    const double so_far =
        r.best_so_far.empty() ? 0 : r.best_so_far[std::min<size_t>(i, r.best_so_far.size() - 1)];
    const double q = so_far > 0 ? best_ns / so_far : 0;
    curve.quality[static_cast<size_t>(i)] += q;
    if (reached == 0 && q >= target) reached = i + 1;
  }
  curve.trials_to_target.push_back(reached);
}

}  // namespace

SearchStudy replay_searches(const Workload& w, const std::vector<Measurement>& table,
                            const StudyOptions& o) {
  const KnobSpace space(w.build(w.arg_types).knobs);
  DYNVM_INTERNAL_CHECK(table.size() == space.size(), "a search study's table covers the space");
  SearchStudy study;
  study.space = space.size();
  for (const Measurement& m : table) {
    if (!m.ok()) continue;
    ++study.measured;
    if (study.best_ns == 0 || m.cost_ns < study.best_ns) study.best_ns = m.cost_ns;
  }
  if (study.measured == 0) user_error(w.name, ": no configuration could be measured");
  const Measurement& d = table.at(space.default_index());
  study.default_ns = d.ok() ? d.cost_ns : 0;
  const int budget = static_cast<int>(std::min<uint64_t>(space.size(), std::max(o.trials, 1)));
  FeatureTable features;  // every replay lowers the same configurations at the same sizes
  for (int s = 0; s < o.seeds; ++s) {
    const uint64_t seed = static_cast<uint64_t>(s) + 1;
    add_replay(study.model, replay(w, space, table, o, SearchKind::kModel, seed, features),
               study.best_ns, o.target, budget);
    add_replay(study.random, replay(w, space, table, o, SearchKind::kRandom, seed, features),
               study.best_ns, o.target, budget);
  }
  for (SearchCurve* c : {&study.model, &study.random}) {
    for (double& q : c->quality) q /= std::max(o.seeds, 1);
  }
  return study;
}

double median_trials(const SearchCurve& c, int budget) {
  if (c.trials_to_target.empty()) return 0;
  std::vector<int> t;
  for (int n : c.trials_to_target) t.push_back(n > 0 ? n : budget + 1);
  std::sort(t.begin(), t.end());
  const size_t m = t.size() / 2;
  return t.size() % 2 ? t[m] : 0.5 * (t[m - 1] + t[m]);
}

int seeds_reaching(const SearchCurve& c) {
  return static_cast<int>(std::count_if(c.trials_to_target.begin(), c.trials_to_target.end(),
                                        [](int n) { return n > 0; }));
}

}  // namespace dynvm::tune
