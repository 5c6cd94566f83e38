#include "tools/vmbench/bench.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>

#include "serializer/vmexe.h"
#include "tools/progress_line.h"
#include "tools/vmbench/ort_peer.h"
#include "tools/vmc/compile_model.h"
#include "tools/vmrun/input_binding.h"
#include "tools/vmtune/size_sets.h"
#include "vm/allocator.h"
#include "vm/error.h"
#include "vm/executor.h"
#include "vm/npy.h"
#include "vm/program.h"
#include "vm/temp_dir.h"

namespace dynvm::vmbench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One build: compiled, timed, sized, loaded.
struct Build {
  BuildInfo info;
  std::shared_ptr<const vm::Program> program;
};

Build compile_build(const vmc::Options& options, const std::string& label) {
  Build b;
  b.info.label = label;
  const auto start = Clock::now();
  try {
    vm::Executable exe = vmc::compile_model(options);
    b.info.compile_s = seconds_since(start);
    b.info.file_bytes = serializer::write_vmexe(exe).size();
    b.program = vm::Program::load(std::move(exe));
    b.info.ok = true;
  } catch (const UserError& e) {
    b.info.error = e.what();
  }
  return b;
}

// The static build of one size: every input's shape fixed; the dims' ranges and versions
// are the shapes' to decide, aliases (--dim A=B) still say which dims are one.
vmc::Options static_options(const vmc::Options& dynamic, const vm::Executable& exe,
                            const vmtune::SizeSet& size,
                            const std::map<std::string, vm::Tensor>& valued) {
  vmc::Options o = dynamic;
  o.import.dims.clear();
  o.compile.dim_versions.clear();
  o.compile.lower.static_shapes.clear();
  for (size_t i = 0; i < exe.inputs.size(); ++i) {
    const std::string& name = exe.inputs[i].name;
    auto v = valued.find(name);
    o.compile.static_inputs[name] = v != valued.end() ? v->second.shape() : size[i];
  }
  return o;
}

// Times `repeat` runs after one warm-up; the pool's peak over them.
EngineResult measure(vm::Executor& executor, const std::vector<vm::Value>& inputs, int repeat) {
  EngineResult r;
  vm::PooledAllocator& pool = vm::device_allocator(vm::kCpu);
  pool.release_cached();
  pool.reset_peak();
  try {
    executor.run(inputs);
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
      const auto start = Clock::now();
      executor.run(inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    r.latency = vm::latency_stats(std::move(ms));
    r.peak_bytes = pool.stats().peak_bytes;
    r.measured = true;
  } catch (const UserError& e) {
    r.error = e.what();
  }
  return r;
}

// Keeps the round with the lower median; an error ends the engine's rounds at this size.
void keep_best(EngineResult& best, const EngineResult& round) {
  if (!round.measured) {
    best.error = round.error;
    return;
  }
  if (!best.measured || round.latency.median_ms < best.latency.median_ms) best = round;
}

}  // namespace

BenchReport run_bench(const Options& o, const std::string& argv0) {
  tools::ProgressLine progress(!o.quiet);
  BenchReport report;
  report.model = fs::path(o.compile.model).filename().string();
  report.rounds = o.rounds;
  report.repeat = o.repeat;

  progress.show("vmbench: compiling " + report.model + " with its symbolic dims");
  Build dynamic = compile_build(o.compile, "dynamic");
  report.dynamic = dynamic.info;
  if (!dynamic.info.ok) {
    progress.clear();
    throw UserError(dynamic.info.error);
  }
  const vm::Executable& exe = dynamic.program->exe();
  for (const vm::TensorSpec& t : exe.inputs) {
    if (t.form != vm::ValueForm::kTensor) {
      user_error("input '", t.name, "' is a ", vm::value_form_name(t.form),
                 "; vmbench measures models whose inputs are tensors");
    }
  }

  // A size outside a dim's range is not a usage error: the static build may still take it.
  const vmtune::ChosenSizes chosen =
      vmtune::choose_sizes(o.sizes, o.sizes_from, o.inputs, exe, /*check_dims=*/false);
  const std::vector<vmtune::SizeSet>& sets = chosen.sets;
  const std::map<std::string, vm::Tensor>& valued = chosen.valued;
  report.weights = chosen.weights;
  report.weighted = !o.sizes_from.empty();
  for (const vmtune::SizeSet& s : sets) {
    report.sizes.push_back(vmtune::describe(s, exe, chosen.valued_names));
  }

  // Each size's inputs, shared by every engine (ONNX Runtime reads them from .npy files).
  vm::TempDir tmp("vmbench");
  std::vector<std::vector<vm::Value>> inputs(sets.size());
  std::vector<std::map<std::string, std::string>> input_files(sets.size());
  for (size_t k = 0; k < sets.size(); ++k) {
    for (size_t i = 0; i < exe.inputs.size(); ++i) {
      const vm::TensorSpec& spec = exe.inputs[i];
      auto v = valued.find(spec.name);
      vm::Tensor t = v != valued.end()
                         ? v->second
                         : vmrun::random_tensor({sets[k][i], spec.dtype}, o.seed + 7919 * k + i);
      inputs[k].emplace_back(t);
      if (o.ort) {
        const fs::path file = tmp.path() / str_cat("size", k, "_input", i, ".npy");
        vm::write_npy(t, file.string());
        input_files[k][spec.name] = file.string();
      }
    }
  }

  std::vector<Build> statics;
  std::ostream quiet_log(nullptr);
  for (size_t k = 0; k < sets.size(); ++k) {
    progress.show(str_cat("vmbench: compiling static build ", k + 1, "/", sets.size(), " (",
                          report.sizes[k], ")"));
    vmc::Options options = static_options(o.compile, exe, sets[k], valued);
    options.compile.log = &quiet_log;  // the dynamic build has shown the model's warnings
    statics.push_back(compile_build(options, report.sizes[k]));
    report.statics.push_back(statics.back().info);
  }

  std::string ort_run;
  if (!o.ort) {
    report.ort_note = "add --ort";
  } else {
    ort_run = find_ort_run(o.ort_run, argv0);
    if (ort_run.empty()) {
      report.ort_note = o.ort_run.empty() ? "ort_run.mjs not found: give --ort-run PATH"
                                          : o.ort_run + " does not exist";
    }
  }

  for (int threads : o.threads) {
    ThreadRun run;
    run.threads = threads;
    run.sizes.resize(sets.size());
    vm::TbbExecutor dynamic_executor(dynamic.program, threads);
    std::vector<std::unique_ptr<vm::TbbExecutor>> static_executors(sets.size());
    for (size_t k = 0; k < sets.size(); ++k) {
      if (statics[k].program) {
        static_executors[k] = std::make_unique<vm::TbbExecutor>(statics[k].program, threads);
      } else {
        run.sizes[k].stat.error = "not built";
      }
    }
    for (int round = 0; round < o.rounds; ++round) {
      for (size_t k = 0; k < sets.size(); ++k) {
        progress.show(str_cat("vmbench: ", threads, " thread", threads == 1 ? "" : "s", ", round ",
                              round + 1, "/", o.rounds, ", size ", k + 1, "/", sets.size(), " (",
                              report.sizes[k], ")"));
        SizeResult& z = run.sizes[k];
        if (z.dynamic.error.empty())
          keep_best(z.dynamic, measure(dynamic_executor, inputs[k], o.repeat));
        if (static_executors[k] && z.stat.error.empty()) {
          keep_best(z.stat, measure(*static_executors[k], inputs[k], o.repeat));
        }
        if (!ort_run.empty() && z.ort.error.empty()) {
          OrtResult ort =
              run_ort(ort_run, o.compile.model, input_files[k], threads, o.repeat, tmp.path());
          EngineResult e;
          e.measured = ort.latency.has_value();
          if (ort.latency) e.latency = *ort.latency;
          e.error = ort.error;
          keep_best(z.ort, e);
        }
      }
    }
    report.runs.push_back(std::move(run));
  }
  progress.clear();
  return report;
}

}  // namespace dynvm::vmbench
