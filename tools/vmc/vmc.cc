// vmc: compiles an ONNX model into a .vmexe: the ONNX import (frontends/onnx), then the
// compiler (compiler/pipeline.h), which verifies the executable it returns. Every
// failure is one line on stderr starting with "vmc: " and a non-zero exit: 2 for a
// malformed command line, 1 for a model it cannot compile. The output file is written
// only when compilation succeeded (to a temporary name, then renamed), so a failed run
// never leaves a half-written executable behind.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include "kernels/tune/records.h"
#include "serializer/vmexe.h"
#include "tools/tool_main.h"
#include "tools/vmc/specialize_from.h"
#include "tools/vmc/vmc_options.h"
#include "vm/error.h"

namespace dynvm::vmc {
namespace {

// A one-line progress display on stderr for kernel compilation, shown once compiling has
// taken more than two seconds (and only on a terminal).
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO) != 0) {}
  void update(size_t done, size_t total, const std::string& what) {
    if (!enabled_) return;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (s < 2.0) return;
    std::fprintf(stderr, "\rvmc: lowering kernel %zu/%zu %-40.40s", done, total, what.c_str());
    if (done == total)
      std::fprintf(stderr, "\rvmc: generating machine code for %zu kernels...%-20s", total, "");
    shown_ = true;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\r%-90s\r", "");
  }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

int run(int argc, const char* const* argv) {
  Options o = parse_options(argc, argv);
  if (o.help) {
    std::cout << usage_text();
    return 0;
  }
  if (o.version) {
    std::cout << "vmc (dynvm) 0.1 (.vmexe format " << serializer::kFormatMajor << "."
              << serializer::kFormatMinor << ")\n";
    return 0;
  }
  Progress progress(!o.quiet);
  o.compile.lower.progress = [&](size_t d, size_t t, const std::string& w) {
    progress.update(d, t, w);
  };
  o.compile.lower.producer = "vmc 0.1 from " + std::filesystem::path(o.model).filename().string();
  auto start = std::chrono::steady_clock::now();
  if (!o.tuning_log.empty()) {
    if (!std::filesystem::exists(o.tuning_log)) user_error("cannot open ", o.tuning_log);
    const std::string target = o.compile.lower.target.description();
    const std::vector<tune::TuningRecord> records = tune::read_records(o.tuning_log);
    for (auto& [workload, record] : tune::best_records(records, target)) {
      o.compile.lower.tuned_knobs[workload] = record.knobs;
    }
    for (auto& [workload, group] : tune::range_records(records, target)) {
      for (const tune::TuningRecord& r : group) {
        o.compile.lower.tuned_ranges[workload].push_back(
            {r.range->arg, r.range->axis, r.range->lo, r.range->hi, r.knobs});
      }
    }
  }
  if (!o.cost_model.empty()) {
    std::ifstream in(o.cost_model, std::ios::binary);
    if (!in) user_error("cannot open ", o.cost_model);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    o.compile.lower.cost_model =
        std::make_shared<const tune::CostModel>(tune::CostModel::load(bytes));
  }
  // The first step, reported as the compiler reports its own.
  compiler::Module module = frontends::onnx_import::import_onnx_file(o.model, o.import);
  double import_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  compiler::report_step(
      o.compile, "import", import_ms, true,
      str_cat(module.functions.size(), " functions, ", module.dims.size(), " symbolic dims"));
  compiler::dump_ir(o.compile, "import", module);
  if (!o.specialize_from.empty()) {
    std::vector<std::string> sizes = specialize_from(o.specialize_from, module, o.compile.lower);
    if (!o.quiet && sizes.empty()) {
      std::fprintf(stderr, "vmc: no size in %s carries 5%% of the requests\n",
                   o.specialize_from.c_str());
    }
    for (const std::string& s : sizes) {
      if (!o.quiet) std::fprintf(stderr, "vmc: specializing for %s\n", s.c_str());
    }
  }
  vm::Executable exe;
  try {
    exe = compiler::compile(std::move(module), o.compile);
  } catch (...) {
    progress.finish();
    throw;
  }
  progress.finish();
  std::string tmp = o.output + ".tmp";
  serializer::save_vmexe(exe, tmp);
  std::filesystem::rename(tmp, o.output);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.quiet) {
    size_t variants = 0;
    for (const auto& k : exe.kernels) variants += k.variants.size();
    size_t tuned = 0, ranked = 0;
    for (const auto& k : exe.kernels) {
      tuned += k.tuned() ? 1 : 0;
      ranked += k.ranked() ? 1 : 0;
    }
    std::fprintf(stderr,
                 "vmc: wrote %s (%zu kernels, %zu tuned, %zu ranked, %zu variants, %zu "
                 "instructions) in %.1f s\n",
                 o.output.c_str(), exe.kernels.size(), tuned, ranked, variants,
                 exe.functions.empty() ? size_t{0} : exe.functions[0].code.size(), s);
  }
  return 0;
}

}  // namespace
}  // namespace dynvm::vmc

int main(int argc, char** argv) {
  return dynvm::tools::tool_main("vmc", [&] { return dynvm::vmc::run(argc, argv); });
}
