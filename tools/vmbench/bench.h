// vmbench's work, in order: compile the model once with its symbolic dims, choose the sizes
// (--sizes, --sizes-from or sampled), compile it statically for each, make each size's
// inputs, and run the dynamic build, the static build of that size (and ONNX Runtime) in
// interleaved rounds, keeping each one's best round. A size that a build cannot take is
// recorded with its one-line reason and the others are still measured.
#pragma once

#include <string>

#include "tools/vmbench/report.h"
#include "tools/vmbench/vmbench_options.h"

namespace dynvm::vmbench {

// Throws UserError when the model itself cannot be compiled or an option is wrong.
BenchReport run_bench(const Options& o, const std::string& argv0);

}  // namespace dynvm::vmbench
