// One schedule for a size range, or a few for its parts. After a workload's search, when
// no single measured configuration is good at every size, the sizes are split on one
// symbolic argument dim into two sub-ranges, each with the configuration that is best on
// its sizes; vmc then compiles a variant per sub-range behind the kernel's dispatch table
// (a kRange condition on that dim), so each size runs the schedule tuned for its part.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/tune/measure.h"

namespace dynvm::tune {

// Sizes whose argument `arg` has dim `axis` in [lo, hi] (arguments: inputs, then outputs).
struct SizeRange {
  uint32_t arg = 0;
  uint32_t axis = 0;
  int64_t lo = 0;
  int64_t hi = 0;
  bool operator==(const SizeRange&) const = default;
};

struct RangeChoice {
  SizeRange range;
  ops::KnobValues knobs;
  std::vector<size_t> sizes;  // the workload's sizes inside the range
  double cost_ns = 0;         // weighted cost over them (weights as in the workload)
};

// Two choices covering every value of one symbolic dim (the lower part from 0, the upper to
// the largest int64), when their cost over the workload's sizes is at least `min_gain`
// (a fraction) below the best single configuration's; else none. Only candidates measured
// at every size count. The dim split on is the one that splits best among the workload's
// symbolic input dims.
std::vector<RangeChoice> split_by_range(const Workload& w, const std::vector<Measurement>& measured,
                                        double min_gain = 0.05);

}  // namespace dynvm::tune
