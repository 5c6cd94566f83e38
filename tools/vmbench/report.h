// What vmbench measured, and how it is shown: the terminal table, the JSON file and the
// numbers both take from one place (the SVG plot is svg_plot.h).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vm/profile.h"

namespace dynvm::vmbench {

// One engine at one size and thread count.
struct EngineResult {
  bool measured = false;
  std::string error;         // why not, in one line ("" and !measured: not asked for)
  vm::LatencyStats latency;  // of the round with the best median
  size_t peak_bytes = 0;     // the pool's peak over the runs (dynvm's engines)
};

struct SizeResult {
  EngineResult dynamic, stat, ort;
};

// One compilation.
struct BuildInfo {
  std::string label;  // "dynamic" or the size
  bool ok = false;
  std::string error;
  double compile_s = 0;
  size_t file_bytes = 0;
};

struct ThreadRun {
  int threads = 1;
  std::vector<SizeResult> sizes;  // parallel to BenchReport::sizes
};

struct BenchReport {
  std::string model;
  int rounds = 0;
  int repeat = 0;
  std::vector<std::string> sizes;  // "x=1x3x48x320"
  std::vector<double> weights;     // request counts (--sizes-from), else all 1
  bool weighted = false;
  BuildInfo dynamic;
  std::vector<BuildInfo> statics;  // one per size
  std::string ort_note;            // why ONNX Runtime was not measured; "" when it was
  std::vector<ThreadRun> runs;
};

// Medians as printed (ms, 3 decimals), and ratios computed from those printed values.
double printed_ms(double ms);

// The tables: per thread count, per size the latencies, ratios and peak memory; then the
// builds with the totals (one dynamic build against one static build per size, with the
// number of sizes from which the dynamic one costs less to compile).
std::string format_report(const BenchReport& r);
nlohmann::json report_json(const BenchReport& r);

}  // namespace dynvm::vmbench
