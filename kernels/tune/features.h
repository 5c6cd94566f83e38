// What the tuner's cost model sees of a kernel: a fixed-length vector of numbers computed from
// its lowered TIR (after vectorize, unroll, flatten and parallel outlining), in the spirit of
// AutoTVM's itervar/curve features and Ansor's per-store features, but one vector per kernel
// rather than per statement. Counts are weighted by how often a statement runs (the product of
// its enclosing loop extents) and log-scaled, log2(1 + x), so that kernels of very different
// sizes land in the same range. README.md lists every feature and why it is there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/tir/stmt.h"

namespace dynvm::tune {

// Buffers described one by one (the rest only count in the totals), busiest first.
inline constexpr size_t kNumBufferSlots = 4;
inline constexpr size_t kFeaturesPerBuffer = 6;
inline constexpr size_t kNumScalarFeatures = 46;
// A fixed-length vector describing one lowered kernel, for the cost model.
inline constexpr size_t kNumFeatures = kNumScalarFeatures + kNumBufferSlots * kFeaturesPerBuffer;

// Features of `f`: its entry and every parallel region (weighted by the region's extent).
// Symbolic extents and sizes are evaluated with `dim_values` (variable name -> value); a
// variable missing from it counts as 64. Accepts any TIR (unknown shapes of IR contribute
// nothing) and never throws for a well-formed LoweredFunc; every value is finite.
std::vector<float> kernel_features(const tir::LoweredFunc& f,
                                   const std::map<std::string, int64_t>& dim_values = {});

// kNumFeatures names, in the order kernel_features writes them (for debugging and dumps).
std::vector<std::string> feature_names();

}  // namespace dynvm::tune
