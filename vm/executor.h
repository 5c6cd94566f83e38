// Executors run requests against one shared, immutable Program. Both share one
// interface so tests can swap the threaded executor for the synchronous one.
//   * SyncExecutor: runs on the calling thread; kernels' parallel loops run inline, in
//     order. Deterministic; for tests and single-request tools.
//   * TbbExecutor: a tbb::task_arena with a fixed thread count runs everything: each
//     request and the parallel loops of its kernels. run() is thread-safe; concurrent
//     callers each borrow a VirtualMachine (registers, frames) from a pool and give it
//     back, so steady-state requests allocate no VM state.
// Either can profile (set_profiling): each run's VM profile is merged into the executor's
// as the VM goes back to the pool, so profile() covers every completed run on any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "vm/interpreter.h"

namespace dynvm::vm {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs the entry function on `inputs` (checked against the signature). Thread-safe.
  virtual std::vector<Value> run(std::span<const Value> inputs) = 0;
  virtual int num_threads() const = 0;
  const Program& program() const { return *program_; }

  // Profiling (vm/profile.h), off by default: while on, the VMs time each run and each
  // kernel call. Runs already in flight keep the setting they started with.
  void set_profiling(bool on) { profiling_.store(on, std::memory_order_relaxed); }
  bool profiling() const { return profiling_.load(std::memory_order_relaxed); }
  // The merged profile of the runs completed since profiling began or reset_profile().
  Profile profile() const;
  void reset_profile();

 protected:
  explicit Executor(std::shared_ptr<const Program> program);
  // Borrowing and returning pooled VMs.
  std::unique_ptr<VirtualMachine> acquire();
  void release(std::unique_ptr<VirtualMachine> vm);

  std::shared_ptr<const Program> program_;

 private:
  std::atomic<bool> profiling_{false};
  mutable std::mutex pool_mu_;  // guards pool_ and profile_
  std::vector<std::unique_ptr<VirtualMachine>> pool_;
  Profile profile_;
};

class SyncExecutor final : public Executor {
 public:
  explicit SyncExecutor(std::shared_ptr<const Program> program);
  std::vector<Value> run(std::span<const Value> inputs) override;
  int num_threads() const override { return 1; }
};

class TbbExecutor final : public Executor {
 public:
  // num_threads <= 0: all hardware threads.
  TbbExecutor(std::shared_ptr<const Program> program, int num_threads);
  ~TbbExecutor() override;
  std::vector<Value> run(std::span<const Value> inputs) override;
  int num_threads() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dynvm::vm
