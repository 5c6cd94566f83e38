// Measuring schedule candidates of one workload, isolated: the default schedule and the
// candidates are compiled into one kernel library (one LLVM run), and a child process
// (measure_worker.h) runs them at the workload's sizes. A candidate that fails to lower,
// crashes the child, hangs past the time limit or computes a different result than the
// default schedule costs one trial: it gets an error, the child is restarted for the
// rest, and the tuner goes on.
#pragma once

#include <string>
#include <vector>

#include "kernels/codegen/target.h"
#include "kernels/dispatch/specialize.h"
#include "kernels/ops/op.h"
#include "vm/profile.h"

namespace dynvm::tune {

// A size a workload runs at in the model: every argument's shape, and its weight (the
// share of the workload's time spent at this size).
struct SizeSample {
  vm::ArgShapes args;
  double weight = 1;
};

// A kernel to tune: what the compiler asked for (compiler/lower KernelRequest) and where
// the model calls it.
struct Workload {
  std::string key;   // KernelRequest::workload
  std::string name;  // the kernel's name in the model
  dispatch::OpBuilder build;
  std::vector<ops::TensorType> arg_types;  // inputs; symbolic dims as the kernel takes them
  std::vector<SizeSample> sizes;
  double share = 0;  // of the model's kernel time
};

struct MeasureOptions {
  // argv of the measuring process before its two arguments (request file, library file),
  // e.g. {"/usr/bin/vmtune", "--measure-worker"}.
  std::vector<std::string> worker_command;
  codegen::Target target = codegen::Target::host();
  int threads = 1;
  double timeout_s = 10;  // one job's limit: a candidate at one size
  double min_time_ms = 20;
  int min_repeat = 3;
  int max_repeat = 100;
};

struct Measurement {
  ops::KnobValues knobs;
  std::vector<double> ns;  // per size of the workload
  double cost_ns = 0;      // weighted mean over the sizes
  std::string error;       // empty when measured and checked
  bool ok() const { return error.empty(); }
};

// Builds and runs `candidates` of `w` (one Measurement each, in order). Throws only for
// what is not a candidate's fault (no worker, no temporary directory, the default
// schedule failing).
std::vector<Measurement> measure(const Workload& w, const std::vector<ops::KnobValues>& candidates,
                                 const MeasureOptions& options);

}  // namespace dynvm::tune
