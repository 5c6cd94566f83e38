#include "kernels/tune/rank.h"

#include <algorithm>
#include <set>

#include "kernels/arith/evaluate.h"
#include "kernels/tune/features.h"
#include "vm/error.h"

namespace dynvm::tune {

ConfigScorer::ConfigScorer(const ops::OpInstance& op, std::vector<SizePoint> sizes,
                           FeatureTable* shared)
    : op_(op), space_(op.knobs), sizes_(std::move(sizes)), features_(shared ? *shared : own_) {}

const std::optional<std::vector<std::vector<float>>>& ConfigScorer::features(uint64_t index) {
  auto it = features_.find(index);
  if (it != features_.end()) return it->second;
  std::optional<std::vector<std::vector<float>>> f;
  try {
    tir::LoweredFunc lowered = ops::lower_op(op_, space_.at(index), "ranked");
    f.emplace();
    for (const SizePoint& s : sizes_) f->push_back(kernel_features(lowered, s.dims));
  } catch (const std::exception&) {
    f.reset();  // a configuration the template refuses for these arguments
  }
  return features_.emplace(index, std::move(f)).first->second;
}

double ConfigScorer::predicted(const CostModel& model, uint64_t index) {
  auto cached = predicted_.find(index);
  if (cached != predicted_.end()) return cached->second;
  const auto& f = features(index);
  double score = kUnlowerable;
  if (f) {
    std::vector<double> p = model.predict(*f);
    score = 0;
    for (size_t s = 0; s < p.size(); ++s) score += sizes_[s].weight * p[s];
  }
  predicted_[index] = score;
  return score;
}

namespace {

// The variables `e` mentions, by name.
void collect_vars(const arith::Expr& e, std::map<std::string, arith::VarId>& vars) {
  if (e.kind() == arith::ExprKind::kVar) vars.emplace(e->name, e->var_id);
  for (int i = 0; i < arith::kind_arity(e.kind()); ++i) collect_vars(e.operand(i), vars);
}

// Whether every dim of `arg_types` is at least 1 with the variables at `dims`.
bool all_dims_positive(const std::vector<ops::TensorType>& arg_types,
                       const std::map<std::string, arith::VarId>& vars,
                       const std::map<std::string, int64_t>& dims) {
  arith::VarValues values;
  for (const auto& [name, id] : vars) values[id] = dims.at(name);
  for (const ops::TensorType& t : arg_types) {
    for (const arith::Expr& d : t.shape) {
      try {
        if (arith::evaluate(d, values) < 1) return false;
      } catch (const UserError&) {  // a division by zero: not a size to score at
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::vector<SizePoint> nominal_sizes(const std::vector<ops::TensorType>& arg_types) {
  std::map<std::string, arith::VarId> vars;
  for (const ops::TensorType& t : arg_types) {
    for (const arith::Expr& d : t.shape) collect_vars(d, vars);
  }
  if (vars.empty()) return {SizePoint{}};
  std::vector<SizePoint> points;
  for (int64_t value : kNominalDims) {
    // Doubled until every dim is positive: a kernel scored where its output is empty (a
    // strided window longer than the nominal input: Silero's STFT convolution, kernel
    // 256, stride 128) scores nothing, and the model then keeps the default schedule.
    for (int64_t v = value;; v *= 2) {
      SizePoint p;
      for (const auto& [name, id] : vars) p.dims[name] = v;
      if (all_dims_positive(arg_types, vars, p.dims) || v >= kMaxNominalDim) {
        points.push_back(std::move(p));
        break;
      }
    }
  }
  return points;
}

ops::KnobValues rank_schedule(const ops::OpInstance& op, const std::vector<SizePoint>& sizes,
                              const CostModel& model, const std::set<std::string>& fixed,
                              double min_gain, size_t max_configs) {
  ConfigScorer scorer(op, sizes);
  const KnobSpace& space = scorer.space();
  const uint64_t default_index = space.default_index();
  if (!model.trained() || space.size() <= 1) return space.at(default_index);

  // The default first (it wins ties), then its one-knob neighbours, then random draws.
  const ops::KnobValues base = space.at(default_index);
  std::vector<uint64_t> configs{default_index};
  std::set<uint64_t> seen{default_index};
  auto add = [&](uint64_t i) {
    if (configs.size() >= max_configs || !seen.insert(i).second) return;
    const ops::KnobValues knobs = space.at(i);
    for (const std::string& name : fixed) {
      auto at = knobs.find(name);
      if (at != knobs.end() && at->second != base.at(name)) return;
    }
    configs.push_back(i);
  };
  if (space.size() <= max_configs) {
    for (uint64_t i = 0; i < space.size(); ++i) add(i);
  } else {
    for (const ops::KnobSpec& k : space.knobs()) {
      for (int64_t v : k.candidates) {
        ops::KnobValues moved = base;
        moved[k.name] = v;
        add(space.index_of(moved));
      }
    }
    std::mt19937_64 rng(space.size());
    for (size_t attempts = 0; configs.size() < max_configs && attempts < 8 * max_configs;
         ++attempts) {
      add(space.random(rng));
    }
  }
  // A configuration replaces the default only where the model is sure at every size point:
  // its prediction there at least `min_gain` above the default's.
  const auto& base_features = scorer.features(default_index);
  if (!base_features) return base;
  const std::vector<double> base_scores = model.predict(*base_features);
  uint64_t best = default_index;
  double best_score = scorer.predicted(model, default_index);
  for (uint64_t i : configs) {
    const double score = scorer.predicted(model, i);
    if (score <= best_score) continue;
    const std::vector<double> mine = model.predict(*scorer.features(i));
    bool sure = true;
    for (size_t s = 0; s < mine.size(); ++s) sure = sure && mine[s] - base_scores[s] >= min_gain;
    if (!sure) continue;
    best = i;
    best_score = score;
  }
  return space.at(best);
}

}  // namespace dynvm::tune
