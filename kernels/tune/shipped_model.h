// The cost model that ships with dynvm: trained by scripts/make-tuning-db.sh on the tuning
// records kept in kernels/tune/db/, and built into the library. It ranks the schedules of a
// kernel that no tuning record covers (the compiler's default, LowerOptions::rank_schedules),
// so that a model compiled with no flags runs the configurations the model expects to be
// fastest rather than fixed defaults.
#pragma once

#include <vector>

#include "kernels/ops/op.h"
#include "kernels/tune/cost_model.h"

namespace dynvm::tune {

// Loaded once, on first use (thread safe). Untrained when the build holds no model.
const CostModel& shipped_cost_model();

// The knobs of `op` (built for `arg_types`) that `model` ranks first at
// nominal_sizes(arg_types) (rank.h); the template's defaults when the model is untrained.
// `parallel` keeps the template's default: whether to split a kernel over threads depends
// on the sizes it runs at most, which the compiler does not know (measured: ranking it at
// nominal sizes made a model it had not seen 1.6x slower; docs/tuning.md).
// A kernel whose arguments all have fewer than kMinRankedElements elements, with its
// symbolic dims at the largest of kNominalDims, keeps the defaults without being ranked.
// Thread safe.
inline constexpr int64_t kMinRankedElements = 16384;
ops::KnobValues ranked_schedule(const ops::OpInstance& op,
                                const std::vector<ops::TensorType>& arg_types,
                                const CostModel& model = shipped_cost_model());

}  // namespace dynvm::tune
