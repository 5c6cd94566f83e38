#include "kernels/tune/tuner.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <set>

#include "kernels/tune/cost_model.h"
#include "kernels/tune/knob_space.h"
#include "kernels/tune/rank.h"
#include "kernels/tune/training_rows.h"
#include "vm/error.h"

namespace dynvm::tune {

std::map<std::string, int64_t> dim_values(const Workload& w, const vm::ArgShapes& args) {
  std::map<std::string, int64_t> values;
  for (size_t i = 0; i < w.arg_types.size() && i < args.size(); ++i) {
    const std::vector<arith::Expr>& dims = w.arg_types[i].shape;
    for (size_t d = 0; d < dims.size() && d < args[i].size(); ++d) {
      if (dims[d].kind() == arith::ExprKind::kVar) values[dims[d]->name] = args[i][d];
    }
  }
  return values;
}

TuningRecord record_of(const Workload& w, const std::string& target, const Measurement& m) {
  TuningRecord r;
  r.workload = w.key;
  r.kernel = w.name;
  r.target = target;
  r.knobs = m.knobs;
  r.error = m.error;
  r.cost_ns = m.ok() ? m.cost_ns : 0;
  for (size_t s = 0; s < w.sizes.size(); ++s) {
    r.sizes.push_back({w.sizes[s].args, w.sizes[s].weight, m.ok() ? m.ns.at(s) : 0});
  }
  return r;
}

namespace {

// Ranking the whole space costs one lowering per configuration: up to this many, the
// model scores them all; beyond, simulated annealing walks the space.
constexpr uint64_t kExhaustiveLimit = 512;
// A fit costs seconds at a few thousand rows (one thread, refit after every batch): the
// model trains on every row of the workload being tuned and an even sample of the earlier
// ones, up to this many rows in all.
constexpr size_t kMaxTrainingRows = 1500;

}  // namespace

struct Tuner::State {
  TuneOptions options;
  std::map<std::string, std::vector<TuningRecord>> previous;  // by workload
  std::string target;
  std::mt19937_64 rng;
  CostModel model;
  // Every measurement so far, of every workload: one row per (candidate, size).
  std::vector<std::vector<float>> rows;
  std::vector<double> scores;
  std::vector<int64_t> groups;
  int64_t next_group = 0;

  // Trains the model for the workload whose groups start at `first_group`.
  void fit(int64_t first_group) {
    if (rows.size() <= kMaxTrainingRows) {
      model.fit(rows, scores, groups);
      return;
    }
    std::vector<size_t> mine, earlier;
    for (size_t i = 0; i < rows.size(); ++i)
      (groups[i] >= first_group ? mine : earlier).push_back(i);
    std::vector<size_t> keep = mine;
    const size_t room = kMaxTrainingRows > mine.size() ? kMaxTrainingRows - mine.size() : 0;
    for (size_t k = 0; k < room && !earlier.empty(); ++k) {
      keep.push_back(earlier[k * earlier.size() / room]);
    }
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    std::vector<std::vector<float>> r;
    std::vector<double> s;
    std::vector<int64_t> g;
    for (size_t i : keep) {
      r.push_back(rows[i]);
      s.push_back(scores[i]);
      g.push_back(groups[i]);
    }
    model.fit(r, s, g);
  }
};

Tuner::Tuner(TuneOptions options, std::vector<TuningRecord> previous)
    : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  state_->target = state_->options.measure.target.description();
  state_->rng.seed(state_->options.seed);
  for (TuningRecord& r : previous) {
    // Sub-range choices are not measurements (ranges.h): nothing to resume from them.
    if (r.target == state_->target && !r.range) {
      state_->previous[r.workload].push_back(std::move(r));
    }
  }
}

Tuner::~Tuner() = default;

namespace {

// One workload's search: the scores of the configurations it looked at (rank.h), and the
// walk that finds more.
class Search {
 public:
  Search(const Workload& w, const ops::OpInstance& op, std::mt19937_64& rng, FeatureTable* features)
      : scorer_(op, size_points(w), features), space_(scorer_.space()), rng_(rng) {}

  const KnobSpace& space() const { return space_; }
  const std::optional<std::vector<std::vector<float>>>& features(uint64_t index) {
    return scorer_.features(index);
  }
  double predicted(const CostModel& model, uint64_t index) {
    return scorer_.predicted(model, index);
  }
  void forget_predictions() { scorer_.forget_predictions(); }

  // Up to `n` unmeasured configurations the model ranks highest.
  std::vector<uint64_t> best_predicted(const CostModel& model, const std::set<uint64_t>& measured,
                                       size_t n) {
    std::vector<std::pair<double, uint64_t>> scored;
    if (space_.size() <= kExhaustiveLimit) {
      for (uint64_t i = 0; i < space_.size(); ++i) {
        if (measured.count(i) == 0) scored.emplace_back(predicted(model, i), i);
      }
    } else {
      std::set<uint64_t> seen;
      for (uint64_t i : anneal(model, measured)) {
        if (measured.count(i) == 0 && seen.insert(i).second)
          scored.emplace_back(predicted(model, i), i);
      }
    }
    std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::vector<uint64_t> out;
    for (const auto& [score, i] : scored) {
      if (out.size() == n) break;
      out.push_back(i);
    }
    return out;
  }

 private:
  // Simulated annealing over the space with the model's score as the energy: a few walkers
  // from the best measured configurations and random ones, a step to a neighbour taken when
  // it scores higher or, with falling probability, lower. Returns every configuration seen.
  std::vector<uint64_t> anneal(const CostModel& model, const std::set<uint64_t>& measured) {
    constexpr int kWalkers = 16, kSteps = 60;
    std::vector<uint64_t> walkers(measured.begin(), measured.end());
    std::shuffle(walkers.begin(), walkers.end(), rng_);
    walkers.resize(std::min<size_t>(walkers.size(), kWalkers / 2));
    while (walkers.size() < kWalkers) walkers.push_back(space_.random(rng_));
    std::vector<uint64_t> seen(walkers);
    std::uniform_real_distribution<double> coin(0, 1);
    double temperature = 1.0;
    for (int step = 0; step < kSteps; ++step, temperature *= 0.93) {
      for (uint64_t& at : walkers) {
        const uint64_t next = space_.neighbour(at, rng_);
        const double gain = predicted(model, next) - predicted(model, at);
        if (gain >= 0 || coin(rng_) < std::exp(gain / std::max(temperature, 1e-6))) at = next;
        seen.push_back(next);
      }
    }
    return seen;
  }

  static std::vector<SizePoint> size_points(const Workload& w) {
    std::vector<SizePoint> points;
    for (const SizeSample& s : w.sizes) points.push_back({dim_values(w, s.args), s.weight});
    return points;
  }

  ConfigScorer scorer_;
  const KnobSpace& space_;
  std::mt19937_64& rng_;
};

// A training row's task: the workload at its s-th size.
std::string task_name(const Workload& w, size_t s) {
  std::string out = w.key + " @";
  for (const std::vector<int64_t>& shape : w.sizes[s].args) {
    out += " ";
    for (size_t d = 0; d < shape.size(); ++d) out += (d ? "x" : "") + std::to_string(shape[d]);
  }
  return out;
}

// A previous run's record as a measurement of this workload, when it was made at the same
// sizes, in any order (otherwise its cost is not comparable, and the candidate is measured
// again). Its cost is weighed again with this run's weights.
std::optional<Measurement> resumed(const Workload& w, const TuningRecord& r) {
  if (r.sizes.size() != w.sizes.size()) return std::nullopt;
  Measurement m;
  m.knobs = r.knobs;
  m.error = r.error;
  double total_weight = 0;
  for (const SizeSample& s : w.sizes) {
    auto same = std::find_if(r.sizes.begin(), r.sizes.end(),
                             [&](const SizeCost& c) { return c.args == s.args; });
    if (same == r.sizes.end()) return std::nullopt;
    m.ns.push_back(same->ns);
    m.cost_ns += s.weight * same->ns;
    total_weight += s.weight;
  }
  if (total_weight > 0) m.cost_ns /= total_weight;
  if (!m.ok()) m.cost_ns = 0;
  return m;
}

}  // namespace

TuneResult Tuner::tune(const Workload& w,
                       const std::function<void(const TuneProgress&)>& progress) {
  State& st = *state_;
  const TuneOptions& o = st.options;
  const ops::OpInstance op = w.build(w.arg_types);
  Search search(w, op, st.rng, o.features);
  const KnobSpace& space = search.space();
  const uint64_t default_index = space.default_index();
  const int budget = static_cast<int>(std::min<uint64_t>(space.size(), std::max(o.trials, 1)));
  const int64_t group0 = st.next_group;
  st.next_group += static_cast<int64_t>(w.sizes.size());

  TuneResult result;
  result.best = space.at(default_index);
  std::set<uint64_t> measured;
  auto take = [&](uint64_t index, const Measurement& m) {
    measured.insert(index);
    result.measured.push_back(m);
    ++result.trials;
    if (!m.ok()) {
      ++result.errors;
    } else {
      if (index == default_index) {
        result.default_ns = m.cost_ns;
        result.ns_at_default = m.ns;
      }
      if (result.best_ns == 0 || m.cost_ns < result.best_ns) {
        result.best_ns = m.cost_ns;
        result.best = m.knobs;
        result.ns_at_best = m.ns;
      }
      const auto& f = search.features(index);
      for (size_t s = 0; f && s < w.sizes.size(); ++s) {
        st.rows.push_back((*f)[s]);
        st.scores.push_back(1e9 / std::max(m.ns[s], 1.0));
        st.groups.push_back(group0 + static_cast<int64_t>(s));
        if (!o.rows_path.empty()) {
          append_training_row(o.rows_path, task_name(w, s), st.scores.back(), st.rows.back());
        }
      }
    }
    result.best_so_far.push_back(result.best_ns);
  };

  for (const TuningRecord& r : st.previous[w.key]) {
    if (result.trials >= budget) break;
    std::optional<Measurement> m = resumed(w, r);
    if (!m) continue;
    uint64_t index = 0;
    try {
      index = space.index_of(m->knobs);
    } catch (const UserError&) {
      continue;  // a knob this template no longer has
    }
    if (measured.count(index) == 0) take(index, *m);
  }
  auto report = [&] {
    if (progress) progress({&w, result.trials, budget, result.best_ns, result.default_ns});
  };
  report();

  while (result.trials < budget && measured.size() < space.size()) {
    const size_t n = static_cast<size_t>(std::min(o.batch, budget - result.trials));
    std::vector<uint64_t> batch;
    std::set<uint64_t> chosen;
    auto add = [&](uint64_t i) {
      if (batch.size() < n && measured.count(i) == 0 && chosen.insert(i).second) batch.push_back(i);
    };
    add(default_index);
    // Resumed records may train a model before this run measured anything.
    if (o.search == SearchKind::kModel && !st.model.trained() && st.rows.size() >= 8) {
      st.fit(group0);
      search.forget_predictions();
    }
    // Until this run's measurements train a model, the prior (the shipped model) ranks.
    const CostModel* ranker = st.model.trained() ? &st.model : o.prior;
    if (o.search == SearchKind::kModel && ranker != nullptr && ranker->trained()) {
      const size_t exploit =
          n - static_cast<size_t>(std::floor(static_cast<double>(n) * o.exploration));
      for (uint64_t i : search.best_predicted(*ranker, measured, exploit)) {
        if (batch.size() >= exploit) break;
        add(i);
      }
    }
    for (int attempts = 0; batch.size() < n && attempts < 64 * static_cast<int>(n); ++attempts) {
      add(space.random(st.rng));
    }
    for (uint64_t i = 0; batch.size() < n && i < space.size(); ++i) add(i);  // a tiny space
    if (batch.empty()) break;

    std::vector<ops::KnobValues> candidates;
    for (uint64_t i : batch) candidates.push_back(space.at(i));
    std::vector<Measurement> ms =
        o.measurer ? o.measurer(w, candidates) : measure(w, candidates, o.measure);
    for (size_t k = 0; k < batch.size(); ++k) {
      take(batch[k], ms[k]);
      if (!o.records_path.empty()) append_record(o.records_path, record_of(w, st.target, ms[k]));
    }
    if (o.search == SearchKind::kModel && st.rows.size() >= 8) {
      st.fit(group0);
      search.forget_predictions();
    }
    report();
  }
  return result;
}

}  // namespace dynvm::tune
