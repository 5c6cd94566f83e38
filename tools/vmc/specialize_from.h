// vmc --specialize-from FILE[:MODEL]: kernel variants for the sizes serving traffic has.
// FILE is the shapes histogram vmserve writes (tools/vmserve/shape_histogram.h); the
// input shapes that carry at least kMinShare of the requests (at most kMaxSizes of them,
// the most frequent first) each become a specialization of every symbolic dim of the
// model's inputs, as `--specialize NAME=V` for all of them at once would be. The
// executable still runs every other size, through its generic variants.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/lower/lower.h"

namespace dynvm::vmc {

inline constexpr double kMinShare = 0.05;
inline constexpr size_t kMaxSizes = 4;

// Appends the specializations to `lower.static_shapes` and returns them described
// ("seq=40 batch=1 (31% of requests)"), for vmc to print. Throws UserError.
std::vector<std::string> specialize_from(const std::string& spec, const compiler::Module& module,
                                         compiler::LowerOptions& lower);

}  // namespace dynvm::vmc
