// The register VM. One VirtualMachine runs one program on one thread at a time; its
// register file, frame stack, kernel-argument scratch and dispatch cache are reused from
// run to run (the executor pools VMs, see executor.h). Recursion is bounded by
// kMaxCallDepth so a runaway program gets an error, not a crashed process. With profiling
// on (set_profiling), each run and each kernel call is timed into a Profile (profile.h).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "vm/kernel_call.h"
#include "vm/profile.h"
#include "vm/program.h"
#include "vm/value.h"

namespace dynvm::vm {

inline constexpr size_t kMaxCallDepth = 10000;

class VirtualMachine {
 public:
  explicit VirtualMachine(std::shared_ptr<const Program> program);

  // Where kernels' parallel loops go; nullptr runs them inline.
  void set_parallel_backend(ParallelBackend* backend) { call_ctx_.parallel = backend; }

  // Checks `inputs` against the signature, runs the entry function and returns its
  // outputs (a tuple result is unpacked into its fields). Throws UserError.
  std::vector<Value> run(std::span<const Value> inputs);
  // Runs function `func` on `args` (no signature check) and returns its result.
  Value invoke(size_t func, std::span<const Value> args);

  const Program& program() const { return *program_; }

  // Profiling, off by default. While on, each invoke() (so each run()) and each
  // InvokeKernel adds its wall time (steady_clock) to profile(); while off, the only cost
  // is one well-predicted branch per kernel call and per invoke(). Switching it on or off
  // keeps what was measured.
  void set_profiling(bool on);
  bool profiling() const { return profiling_; }
  const Profile& profile() const { return profile_; }
  void reset_profile();

  // Which variant each kernel call picked last (for tests of the dispatch); -1: none yet.
  int64_t last_variant(size_t kernel) const { return dispatch_[kernel].variant; }

 private:
  struct Frame {
    uint32_t func;
    uint32_t pc;      // of the Invoke to return to (in the caller) / current (in the callee)
    size_t base;      // first register of this frame in regs_
    int64_t ret_dst;  // register of the caller that receives the result
  };
  struct DispatchEntry {
    std::vector<int64_t> key;
    int64_t variant = -1;
  };

  Value invoke_unprofiled(size_t func, std::span<const Value> args);
  Value execute(size_t func, std::span<const Value> args);
  void invoke_kernel(const Instruction& ins, const Value* regs);
  void invoke_kernel_profiled(const Instruction& ins, const Value* regs);
  int64_t select_variant(size_t kernel, const DLTensor* args);
  void reset_state();

  std::shared_ptr<const Program> program_;
  std::vector<Value> regs_;
  std::vector<Frame> frames_;
  std::vector<DLTensor> kernel_args_;
  std::vector<int64_t> key_scratch_;
  std::vector<DispatchEntry> dispatch_;
  KernelCallContext call_ctx_;
  bool profiling_ = false;
  Profile profile_;
};

}  // namespace dynvm::vm
