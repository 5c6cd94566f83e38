// vmbench: dynamic versus static compilation of the user's own model, as one command:
// per size the latency of the one dynamic build and of a static build for that size (and
// ONNX Runtime's with --ort), their ratios and peak memory; per build the compile time and
// file size; the totals. bench.h does the work, report.h and svg_plot.h show it. Every
// failure is one line on stderr starting with "vmbench: " and a non-zero exit (2 for a
// malformed command line); a size one build cannot take is named in the table instead.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tools/tool_main.h"
#include "tools/vmbench/bench.h"
#include "tools/vmbench/svg_plot.h"
#include "vm/error.h"

namespace dynvm::vmbench {
namespace {

void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) user_error("cannot write ", path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) user_error("cannot write ", path, ": ", ec.message());
}

int run(int argc, const char* const* argv) {
  Options o = parse_options(argc, argv);
  if (o.help) {
    std::cout << usage_text();
    return 0;
  }
  const BenchReport report = run_bench(o, argc > 0 ? argv[0] : "vmbench");
  std::cout << format_report(report);
  if (!o.json.empty()) write_file(o.json, report_json(report).dump(1) + "\n");
  if (!o.svg.empty()) write_file(o.svg, svg_plot(report));
  return 0;
}

}  // namespace
}  // namespace dynvm::vmbench

int main(int argc, char** argv) {
  return dynvm::tools::tool_main("vmbench", [&] { return dynvm::vmbench::run(argc, argv); });
}
