// Ranking schedule configurations with a cost model, without measuring them: what the
// tuner's search asks before it measures (tuner.h), and what the compiler asks for a kernel
// no tuning record covers (rank_schedule, with the model that ships with dynvm,
// shipped_model.h). A configuration's score is the model's prediction for its lowered
// kernel at each of a few sizes, weighted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/ops/op.h"
#include "kernels/tune/cost_model.h"
#include "kernels/tune/knob_space.h"

namespace dynvm::tune {

// Dim values (variable name -> value) at which features.h evaluates a kernel, and how much
// each set weighs in a score.
struct SizePoint {
  std::map<std::string, int64_t> dims;
  double weight = 1;
};

// Features of configurations by index (nullopt: it does not lower), for one op at one set
// of sizes.
using FeatureTable = std::unordered_map<uint64_t, std::optional<std::vector<std::vector<float>>>>;

// Features and model scores of the configurations of one op, computed once each.
class ConfigScorer {
 public:
  // `shared`: where features are kept, when they outlive this scorer (the replays of a
  // search study score one workload at the same sizes many times); else its own.
  ConfigScorer(const ops::OpInstance& op, std::vector<SizePoint> sizes,
               FeatureTable* shared = nullptr);

  const KnobSpace& space() const { return space_; }
  const std::vector<SizePoint>& sizes() const { return sizes_; }
  // Features of configuration `index` at each size; nullopt when it does not lower.
  const std::optional<std::vector<std::vector<float>>>& features(uint64_t index);
  // The model's score of configuration `index`: its predictions at each size, weighted
  // (higher is better); a configuration that does not lower scores lowest.
  double predicted(const CostModel& model, uint64_t index);
  // After the model was trained again.
  void forget_predictions() { predicted_.clear(); }

  static constexpr double kUnlowerable = -1e30;

 private:
  const ops::OpInstance& op_;
  KnobSpace space_;
  std::vector<SizePoint> sizes_;
  FeatureTable own_;
  FeatureTable& features_;
  std::unordered_map<uint64_t, double> predicted_;
};

// How many configurations rank_schedule scores at most (each costs a lowering: tens of
// microseconds to milliseconds).
inline constexpr size_t kRankedConfigs = 24;

// Where a kernel with symbolic dims is scored when nothing says where it runs: every
// variable in the dims of `arg_types` at each of kNominalDims, equally weighted. The values are
// small to large and multiples of no tile size, since real sizes rarely are: scored at 16 and 256,
// a 16-row matmul tile looked perfect and ran 2.6x slower than the default at 25 rows.
// Static kernels: one point.
// A value is doubled (up to kMaxNominalDim) while it leaves some dim of the arguments
// empty or negative.
inline constexpr int64_t kNominalDims[] = {10, 50, 250};
inline constexpr int64_t kMaxNominalDim = 1 << 16;
std::vector<SizePoint> nominal_sizes(const std::vector<ops::TensorType>& arg_types);

// The configuration of `op` the model scores highest at `sizes`, among at most
// `max_configs`: the whole space when it is that small, else the default, every
// configuration one knob away from it, and random ones (seeded: the same op gets the same
// answer). Knobs named in `fixed` keep their defaults. A configuration replaces the
// default only when the model scores it at least `min_gain` higher at every size point (in
// the ranking objective's units: a pairwise margin of 1 is about 73% confidence that it is
// faster). The default when nothing is, and when `model` is untrained.
ops::KnobValues rank_schedule(const ops::OpInstance& op, const std::vector<SizePoint>& sizes,
                              const CostModel& model, const std::set<std::string>& fixed = {},
                              double min_gain = 0, size_t max_configs = kRankedConfigs);

}  // namespace dynvm::tune
