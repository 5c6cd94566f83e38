// vmbench --svg: a self-contained SVG (no scripts, no external fonts or files) that a
// browser opens as it is: latency against size for the dynamic build, the static builds
// (and ONNX Runtime), one line style per thread count, on a log scale when the latencies
// span more than 20x; below it, each build's compile time as a bar.
#pragma once

#include <string>

#include "tools/vmbench/report.h"

namespace dynvm::vmbench {

std::string svg_plot(const BenchReport& r);

}  // namespace dynvm::vmbench
