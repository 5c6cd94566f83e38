// vmtune: tunes a model's kernel schedules on this machine (usage in vmtune_options.cc).
//   1. compiles the model as vmc would, keeping the kernels' requests (compiler/pipeline.h);
//   2. runs it at the --sizes (or sampled sizes) with the VM's profiler on, which records
//      every kernel call's argument shapes and time (vm/profile.h): the workloads, the sizes
//      each runs at and their weights, and each workload's share of the time;
//   3. tunes each workload, most time first (kernels/tune/tuner.h), with a progress line,
//      appending records as they are measured; then prints a summary table.
// Errors follow tools/tool_main.h: one line, non-zero exit.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "kernels/tune/measure_worker.h"
#include "kernels/tune/ranges.h"
#include "kernels/tune/shipped_model.h"
#include "kernels/tune/training_rows.h"
#include "tools/progress_line.h"
#include "tools/tool_main.h"
#include "tools/vmc/compile_model.h"
#include "tools/vmrun/input_binding.h"
#include "tools/vmtune/search_study_run.h"
#include "tools/vmtune/size_sets.h"
#include "tools/vmtune/vmtune_options.h"
#include "vm/executor.h"
#include "vm/npy.h"
#include "vm/program.h"

namespace dynvm::vmtune {
namespace {

using Clock = std::chrono::steady_clock;

std::string format_ms(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), ns >= 1e6 ? "%.2f ms" : "%.1f us",
                ns >= 1e6 ? ns / 1e6 : ns / 1e3);
  return buf;
}

std::string speedup_str(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2fx", x);
  return buf;
}

std::string format_duration(double s) {
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%dh%02dm", static_cast<int>(s / 3600),
                  static_cast<int>(s / 60) % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  }
  return buf;
}

// The workloads of `requests` as the profile saw them, most time first.
std::vector<tune::Workload> workloads_of(const std::vector<compiler::KernelRequest>& requests,
                                         const vm::Profile& profile, const Options& o) {
  const double total = static_cast<double>(std::max<int64_t>(profile.kernel_ns(), 1));
  std::vector<tune::Workload> out;
  for (size_t k = 0; k < requests.size() && k < profile.kernels.size(); ++k) {
    const vm::KernelTime& t = profile.kernels[k];
    if (t.calls == 0) continue;
    tune::Workload w;
    w.key = requests[k].workload;
    w.name = requests[k].name;
    w.build = requests[k].build;
    w.arg_types = requests[k].arg_types;
    w.share = static_cast<double>(t.total_ns) / total;
    std::vector<std::pair<int64_t, vm::ArgShapes>> by_time;
    for (const auto& [shapes, c] : t.by_shape) by_time.emplace_back(c.total_ns, shapes);
    std::sort(by_time.begin(), by_time.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    by_time.resize(std::min<size_t>(by_time.size(), static_cast<size_t>(o.max_sizes)));
    double kept = 0;
    for (const auto& [ns, shapes] : by_time) kept += static_cast<double>(ns);
    for (const auto& [ns, shapes] : by_time) {
      w.sizes.push_back({shapes, kept > 0 ? static_cast<double>(ns) / kept : 1.0});
    }
    // In a fixed order (the sizes' own), not the timings': records of another run line up.
    std::sort(w.sizes.begin(), w.sizes.end(),
              [](const tune::SizeSample& a, const tune::SizeSample& b) { return a.args < b.args; });
    // The same workload twice in one model (two kernels with equal keys do not happen: the
    // compiler shares them) is merged by key all the same.
    out.push_back(std::move(w));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
  return out;
}

void scale_times(vm::Profile& p, double factor) {
  auto scaled = [&](int64_t ns) { return static_cast<int64_t>(static_cast<double>(ns) * factor); };
  for (vm::KernelTime& k : p.kernels) {
    k.total_ns = scaled(k.total_ns);
    for (auto& [shapes, t] : k.by_shape) t.total_ns = scaled(t.total_ns);
  }
  p.run_ns = scaled(p.run_ns);
}

// Runs the model at every size set with the profiler on: where its kernels spend time.
// Each set's time counts `weights[i]` times (relative to the mean weight): how often
// traffic has that size.
vm::Profile profile_model(const vm::Executable& exe, const std::vector<SizeSet>& sets,
                          const std::vector<double>& weights,
                          const std::map<std::string, vm::Tensor>& valued, const Options& o) {
  auto program = vm::Program::load(exe);
  vm::TbbExecutor executor(program, o.tune.measure.threads);
  double mean_weight = 0;
  for (double w : weights) mean_weight += w / static_cast<double>(weights.size());
  vm::Profile total;
  size_t ran = 0;
  for (size_t k = 0; k < sets.size(); ++k) {
    const SizeSet& set = sets[k];
    std::vector<vm::Value> inputs;
    for (size_t i = 0; i < set.size(); ++i) {
      auto given = valued.find(exe.inputs[i].name);
      inputs.push_back(given != valued.end()
                           ? given->second
                           : vmrun::random_tensor({set[i], exe.inputs[i].dtype}, 7 + i));
    }
    try {
      executor.run(inputs);  // warm: first-touch allocation, caches
      executor.reset_profile();
      executor.set_profiling(true);
      for (int r = 0; r < o.profile_runs; ++r) executor.run(inputs);
      executor.set_profiling(false);
      vm::Profile p = executor.profile();
      scale_times(p, weights[k] / mean_weight);
      total.merge(p);
      ++ran;
    } catch (const UserError& e) {
      executor.set_profiling(false);
      std::cerr << "vmtune: warning: skipping " << describe(set, exe) << ": " << e.what() << "\n";
    }
  }
  if (ran == 0) user_error("the model ran at none of the sizes (give some with --sizes)");
  return total;
}

// "1x3x48x320, 16x3x3x3 -> 1x16x24x160": a workload's size, arguments then outputs.
std::string size_str(const vm::ArgShapes& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    out += i == 0 ? "" : ", ";
    for (size_t d = 0; d < args[i].size(); ++d) out += (d ? "x" : "") + std::to_string(args[i][d]);
    if (args[i].empty()) out += "scalar";
  }
  return out;
}

// For workloads measured at several sizes: at each size, the default schedule, the one
// chosen for the whole range, and the best candidate at that size alone; the regret is
// chosen / best-alone.
void print_size_regret(const std::vector<tune::Workload>& ws,
                       const std::vector<tune::TuneResult>& rs) {
  bool header = false;
  for (size_t i = 0; i < ws.size(); ++i) {
    const tune::Workload& w = ws[i];
    const tune::TuneResult& r = rs[i];
    if (w.sizes.size() < 2 || r.ns_at_best.size() != w.sizes.size()) continue;
    if (!header) {
      std::printf("\nper size (one schedule for the range vs the best at each size alone):\n");
      std::printf("%-28s %-40s %7s %11s %11s %11s %7s\n", "kernel", "size", "weight", "default",
                  "range", "alone", "regret");
      header = true;
    }
    for (size_t s = 0; s < w.sizes.size(); ++s) {
      double alone = 0;
      for (const tune::Measurement& m : r.measured) {
        if (m.ok() && m.ns.size() == w.sizes.size() && (alone == 0 || m.ns[s] < alone))
          alone = m.ns[s];
      }
      const double def = s < r.ns_at_default.size() ? r.ns_at_default[s] : 0;
      std::printf("%-28.28s %-40.40s %6.0f%% %11s %11s %11s %6.2fx\n", w.name.c_str(),
                  size_str(w.sizes[s].args).c_str(), w.sizes[s].weight * 100,
                  def > 0 ? format_ms(def).c_str() : "-", format_ms(r.ns_at_best[s]).c_str(),
                  format_ms(alone).c_str(), alone > 0 ? r.ns_at_best[s] / alone : 0.0);
    }
  }
}

// vmtune --fit-model: a cost model trained on the rows of earlier runs.
int fit_model(const Options& o) {
  const auto start = Clock::now();
  const tune::TrainingRows rows = tune::read_training_rows(o.fit_rows);
  if (rows.features.size() < tune::CostModel::kMinTrainingRows) {
    user_error("--fit-model: ", rows.features.size(), " training rows; a model needs at least ",
               tune::CostModel::kMinTrainingRows);
  }
  tune::CostModel model;
  model.fit(rows.features, rows.score, rows.group);
  const std::vector<uint8_t> bytes = model.save();
  const std::string tmp = o.fit_output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) user_error("cannot write ", tmp);
  }
  std::filesystem::rename(tmp, o.fit_output);
  std::printf("vmtune: wrote %s (%zu rows of %zu tasks, %zu bytes) in %s\n", o.fit_output.c_str(),
              rows.features.size(), rows.tasks, bytes.size(),
              format_duration(std::chrono::duration<double>(Clock::now() - start).count()).c_str());
  return 0;
}

int run(int argc, const char* const* argv) {
  Options o = parse_options(argc, argv);
  if (!o.worker_args.empty()) {
    return tune::run_measure_worker(o.worker_args[0], o.worker_args[1], std::cout, std::cerr);
  }
  if (o.help) {
    std::cout << usage_text();
    return 0;
  }
  if (o.tune.measure.threads <= 0) {
    o.tune.measure.threads = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  }
  if (!o.fit_output.empty()) return fit_model(o);
  o.tune.measure.worker_command = {"/proc/self/exe", "--measure-worker"};
  o.tune.prior = &tune::shipped_cost_model();
  o.tune.records_path = o.output;
  // Status lines go to a terminal only: a failure is then one line, as in every tool.
  const bool chatty = !o.quiet && isatty(STDERR_FILENO) != 0;
  const auto start = Clock::now();

  std::vector<compiler::KernelRequest> requests;
  o.compile.compile.kernel_requests = &requests;
  if (chatty) std::cerr << "vmtune: compiling " << o.compile.model << "\n";
  vmc::Options compile = o.compile;
  compile.quiet = !chatty;
  vm::Executable exe = vmc::compile_model(std::move(compile));

  const ChosenSizes sizes = choose_sizes(o.sizes, o.sizes_from, o.inputs, exe, /*check_dims=*/true);
  const std::vector<SizeSet>& sets = sizes.sets;
  const std::vector<double>& weights = sizes.weights;
  if (chatty) {
    std::cerr << "vmtune: profiling at";
    for (size_t k = 0; k < sets.size(); ++k) {
      std::cerr << " [" << describe(sets[k], exe, sizes.valued_names);
      if (!o.sizes_from.empty()) std::cerr << " x" << weights[k];
      std::cerr << "]";
    }
    std::cerr << "\n";
  }
  std::vector<tune::Workload> all =
      workloads_of(requests, profile_model(exe, sets, weights, sizes.valued, o), o);
  std::vector<tune::Workload> chosen;
  for (tune::Workload& w : all) {
    if (w.share < o.min_share) continue;
    if (o.max_workloads > 0 && static_cast<int>(chosen.size()) >= o.max_workloads) break;
    chosen.push_back(std::move(w));
  }
  double covered = 0;
  for (const tune::Workload& w : chosen) covered += w.share;
  if (chatty) {
    std::fprintf(stderr,
                 "vmtune: %zu of %zu kernels to tune (%.0f%% of kernel time), %d trials each\n",
                 chosen.size(), all.size(), covered * 100, o.tune.trials);
  }

  if (o.search_study) return run_search_study(chosen, o, chatty);

  std::vector<tune::TuningRecord> previous = tune::read_records(o.output);
  auto previous_ranges = tune::range_records(previous, o.tune.measure.target.description());
  tune::Tuner tuner(o.tune, previous);
  tools::ProgressLine line(chatty);
  const auto tuning_start = Clock::now();
  int trials_done = 0;
  const int trials_total = o.tune.trials * static_cast<int>(chosen.size());
  std::vector<tune::TuneResult> results;
  std::vector<std::vector<tune::RangeChoice>> splits;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const tune::Workload& w = chosen[i];
    tune::TuneResult r = tuner.tune(w, [&](const tune::TuneProgress& p) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - tuning_start).count();
      const int done = trials_done + p.trials;
      const double eta = done > 0 ? elapsed / done * std::max(trials_total - done, 0) : 0;
      std::string best = p.best_ns > 0 ? "best " + format_ms(p.best_ns) : "best -";
      if (p.best_ns > 0 && p.default_ns > 0) {
        char speedup[32];
        std::snprintf(speedup, sizeof(speedup), " (%.2fx default)", p.default_ns / p.best_ns);
        best += speedup;
      }
      line.show(str_cat("vmtune: [", i + 1, "/", chosen.size(), "] ", w.name, "  ", p.trials, "/",
                        p.budget, " trials  ", best, "  ETA ", format_duration(eta)));
    });
    trials_done += std::min(r.trials, o.tune.trials);
    // Sub-range schedules where one schedule cannot serve every size (ranges.h).
    std::vector<tune::RangeChoice> split = tune::split_by_range(w, r.measured);
    const auto& earlier = previous_ranges[w.key];
    const bool known = earlier.size() == split.size() &&
                       std::equal(split.begin(), split.end(), earlier.begin(),
                                  [](const tune::RangeChoice& c, const tune::TuningRecord& e) {
                                    return e.range == c.range && e.knobs == c.knobs;
                                  });
    for (const tune::RangeChoice& c : known ? std::vector<tune::RangeChoice>{} : split) {
      tune::TuningRecord record;
      record.workload = w.key;
      record.kernel = w.name;
      record.target = o.tune.measure.target.description();
      record.knobs = c.knobs;
      record.range = c.range;
      record.cost_ns = c.cost_ns;
      for (size_t s : c.sizes) record.sizes.push_back({w.sizes[s].args, w.sizes[s].weight, 0});
      tune::append_record(o.output, record);
    }
    splits.push_back(std::move(split));
    results.push_back(std::move(r));
  }
  line.clear();

  // The summary: one row per workload.
  std::printf("%-28s %6s %6s %7s %12s %12s %8s  %s\n", "kernel", "share", "sizes", "trials",
              "default", "tuned", "speedup", "knobs");
  double before = 0, after = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const tune::Workload& w = chosen[i];
    const tune::TuneResult& r = results[i];
    const bool both = r.default_ns > 0 && r.best_ns > 0;
    if (both) {
      before += w.share;
      after += w.share * r.best_ns / r.default_ns;
    }
    std::printf("%-28.28s %5.1f%% %6zu %4d/%-2d %12s %12s %7s  %s\n", w.name.c_str(), w.share * 100,
                w.sizes.size(), r.trials, r.errors,
                r.default_ns > 0 ? format_ms(r.default_ns).c_str() : "-",
                r.best_ns > 0 ? format_ms(r.best_ns).c_str() : "-",
                both ? speedup_str(r.default_ns / r.best_ns).c_str() : "-",
                ops::knobs_to_string(r.best).c_str());
  }
  print_size_regret(chosen, results);
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (splits[i].empty()) continue;
    double cost = 0;
    for (const tune::RangeChoice& c : splits[i]) cost += c.cost_ns;
    const tune::SizeRange& r = splits[i][0].range;
    std::printf(
        "%s: by argument %u dim %u, <= %lld: %s; above: %s (%.0f%% less time than one "
        "schedule)\n",
        chosen[i].name.c_str(), r.arg, r.axis, static_cast<long long>(r.hi),
        ops::knobs_to_string(splits[i][0].knobs).c_str(),
        ops::knobs_to_string(splits[i][1].knobs).c_str(), 100 * (1 - cost / results[i].best_ns));
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  if (before > 0) {
    std::printf("tuned kernels: %.2fx faster where measured (%.0f%% of kernel time); %s in all\n",
                before / after, before * 100, format_duration(s).c_str());
  }
  std::printf("records: %s (apply with: vmc %s --tuning-log %s)\n", o.output.c_str(),
              o.compile.model.c_str(), o.output.c_str());
  return 0;
}

}  // namespace
}  // namespace dynvm::vmtune

int main(int argc, char** argv) {
  return dynvm::tools::tool_main("vmtune", [&] { return dynvm::vmtune::run(argc, argv); });
}
