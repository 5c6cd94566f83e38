// See compile_model.h.
#include "tools/vmc/compile_model.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "kernels/tir/printer.h"
#include "kernels/tune/records.h"
#include "tools/vmc/specialize_from.h"
#include "vm/error.h"

namespace dynvm::vmc {

CompileProgress::CompileProgress(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO) != 0) {}

void CompileProgress::update(size_t done, size_t total, const std::string& what) {
  if (!enabled_) return;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (s < 2.0) return;
  std::fprintf(stderr, "\rvmc: lowering kernel %zu/%zu %-40.40s", done, total, what.c_str());
  if (done == total)
    std::fprintf(stderr, "\rvmc: generating machine code for %zu kernels...%-20s", total, "");
  shown_ = true;
}

void CompileProgress::finish() {
  if (shown_) std::fprintf(stderr, "\r%-90s\r", "");
  shown_ = false;
}

namespace {

// --tuning-log: the best record of each kernel measured on this kind of CPU, and the
// records of sub-ranges of its symbolic dims.
void apply_tuning_log(const std::string& path, compiler::LowerOptions& lower) {
  if (!std::filesystem::exists(path)) user_error("cannot open ", path);
  const std::string target = lower.target.description();
  const std::vector<tune::TuningRecord> records = tune::read_records(path);
  for (auto& [workload, record] : tune::best_records(records, target)) {
    lower.tuned_knobs[workload] = record.knobs;
  }
  for (auto& [workload, group] : tune::range_records(records, target)) {
    for (const tune::TuningRecord& r : group) {
      lower.tuned_ranges[workload].push_back(
          {r.range->arg, r.range->axis, r.range->lo, r.range->hi, r.knobs});
    }
  }
}

std::shared_ptr<const tune::CostModel> read_cost_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot open ", path);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  return std::make_shared<const tune::CostModel>(tune::CostModel::load(bytes));
}

}  // namespace

vm::Executable compile_model(Options o, std::string_view model_bytes) {
  CompileProgress progress(!o.quiet);
  o.compile.lower.progress = [&](size_t d, size_t t, const std::string& w) {
    progress.update(d, t, w);
  };
  if (o.dump_tir) {
    // Where --dump-ir writes, as the kernels are lowered.
    std::ostream* log = &compiler::log_of(o.compile);
    o.compile.lower.lowered = [filter = *o.dump_tir, log](const tir::LoweredFunc& f) {
      if (f.func.name.find(filter) == std::string::npos) return;
      *log << "// TIR of " << f.func.name << "\n" << tir::to_string(f) << "\n";
    };
  }
  const std::string name = std::filesystem::path(o.model).filename().string();
  o.compile.lower.producer = "vmc 0.1 from " + name;
  auto start = std::chrono::steady_clock::now();
  if (!o.tuning_log.empty()) apply_tuning_log(o.tuning_log, o.compile.lower);
  if (!o.cost_model.empty()) o.compile.lower.cost_model = read_cost_model(o.cost_model);
  // The first step, reported as the compiler reports its own.
  compiler::Module module =
      model_bytes.empty() ? frontends::onnx_import::import_onnx_file(o.model, o.import)
                          : frontends::onnx_import::import_onnx_bytes(model_bytes, name, o.import);
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
  return exe;
}

std::string executable_summary(const vm::Executable& exe) {
  size_t variants = 0, tuned = 0, ranked = 0;
  for (const vm::Kernel& k : exe.kernels) {
    variants += k.variants.size();
    tuned += k.tuned() ? 1 : 0;
    ranked += k.ranked() ? 1 : 0;
  }
  return str_cat("(", exe.kernels.size(), " kernels, ", tuned, " tuned, ", ranked, " ranked, ",
                 variants, " variants, ",
                 exe.functions.empty() ? size_t{0} : exe.functions[0].code.size(),
                 " instructions)");
}

}  // namespace dynvm::vmc
