// Where a program's time goes: wall time per kernel and for whole runs, as measured by
// a VirtualMachine with profiling on (VirtualMachine::set_profiling or
// Executor::set_profiling). The difference between the two is the time spent outside
// kernels: bytecode, allocation. `vmrun --profile` prints report().
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <vector>

#include "vm/executable.h"

namespace dynvm::vm {

// Calls and their time, for a kernel or for one argument shape of it.
struct CallTime {
  int64_t calls = 0;
  int64_t total_ns = 0;
  void add(const CallTime& other) {
    calls += other.calls;
    total_ns += other.total_ns;
  }
};

// Every argument's shape of one kernel call, inputs then outputs.
using ArgShapes = std::vector<std::vector<int64_t>>;

// One kernel's calls. A call's time is its whole InvokeKernel instruction: argument
// marshalling, variant dispatch and the kernel itself. `by_shape` splits them by the
// arguments' shapes: what the tuner (kernels/tune) measures a kernel at, weighted by the
// time the model spent there.
struct KernelTime : CallTime {
  KernelTime() = default;
  KernelTime(int64_t calls, int64_t total_ns) : CallTime{calls, total_ns} {}
  std::map<ArgShapes, CallTime> by_shape;
};

struct Profile {
  std::vector<KernelTime> kernels;  // indexed like Executable::kernels; may be shorter
  int64_t runs = 0;                 // VirtualMachine::run/invoke calls
  int64_t run_ns = 0;               // their total wall time, kernels included

  // Sum of all kernels' total_ns (never more than run_ns for the same runs).
  int64_t kernel_ns() const;
  // Adds `other`'s counts and times to this one (profiles of pooled VMs, of threads).
  void merge(const Profile& other);
  // Prints one line per kernel that was called, by total time (longest first):
  //   kernel   calls   total ms   mean us   % of run
  // then a last line for the time outside kernels. Names come from `exe`, which must be
  // the executable that was profiled.
  void report(std::ostream& os, const Executable& exe) const;
};

// Whole-run latencies as vmrun --repeat and the Python module's benchmark() report them.
struct LatencyStats {
  size_t runs = 0;
  double median_ms = 0;
  double p90_ms = 0;  // nearest rank: the smallest time that 90% of runs did not exceed
  double min_ms = 0;
  double max_ms = 0;
};
// All zero for no runs.
LatencyStats latency_stats(std::vector<double> ms);

}  // namespace dynvm::vm
