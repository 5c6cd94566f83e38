// vmtune --search-study: model-guided against random search on a model's kernels, each
// search replayed against every configuration's measured cost (kernels/tune/search_study.h),
// printed as one table row per kernel and the best-so-far curves.
#pragma once

#include <vector>

#include "kernels/tune/measure.h"
#include "tools/vmtune/vmtune_options.h"

namespace dynvm::vmtune {

// Measures the spaces of `workloads` (those with at most o.study_max_space configurations;
// every measurement appended to o.output as a record), replays both searches, prints.
int run_search_study(const std::vector<tune::Workload>& workloads, const Options& o, bool chatty);

}  // namespace dynvm::vmtune
