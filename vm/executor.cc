#include "vm/executor.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <optional>

namespace dynvm::vm {

Executor::Executor(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

std::unique_ptr<VirtualMachine> Executor::acquire() {
  std::unique_ptr<VirtualMachine> vm;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      vm = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!vm) vm = std::make_unique<VirtualMachine>(program_);
  vm->set_profiling(profiling());
  return vm;
}

void Executor::release(std::unique_ptr<VirtualMachine> vm) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  // Pooled VMs hold empty profiles: what a run measured moves to the executor's.
  if (vm->profiling()) {
    profile_.merge(vm->profile());
    vm->reset_profile();
  }
  pool_.push_back(std::move(vm));
}

Profile Executor::profile() const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  return profile_;
}

void Executor::reset_profile() {
  std::lock_guard<std::mutex> lock(pool_mu_);
  profile_ = Profile{};
}

namespace {

// Returns the VM to the pool on every exit path, exceptions included (the VM resets
// its own state when a run fails).
template <typename Owner>
class BorrowedVm {
 public:
  BorrowedVm(Owner& owner, std::unique_ptr<VirtualMachine> vm)
      : owner_(owner), vm_(std::move(vm)) {}
  ~BorrowedVm() { owner_(std::move(vm_)); }
  VirtualMachine* operator->() { return vm_.get(); }

 private:
  Owner& owner_;
  std::unique_ptr<VirtualMachine> vm_;
};

class SerialBackend final : public ParallelBackend {
 public:
  int32_t parallel_for(int64_t begin, int64_t end, int64_t grain, DynvmParallelBody body,
                       void* closure) override {
    return end > begin ? body(begin, end, closure) : 0;
  }
};

class TbbBackend final : public ParallelBackend {
 public:
  int32_t parallel_for(int64_t begin, int64_t end, int64_t grain, DynvmParallelBody body,
                       void* closure) override {
    if (end <= begin) return 0;
    // One chunk, or one thread in the arena: the whole range at once (tasks would only
    // add their overhead, a microsecond or more per chunk of a small kernel).
    if (end - begin <= grain || oneapi::tbb::this_task_arena::max_concurrency() == 1) {
      return body(begin, end, closure);
    }
    std::atomic<int32_t> status{0};
    oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<int64_t>(begin, end, grain),
                              [&](const oneapi::tbb::blocked_range<int64_t>& r) {
                                if (status.load(std::memory_order_relaxed) != 0) return;
                                int32_t rc = body(r.begin(), r.end(), closure);
                                if (rc != 0) {
                                  int32_t expected = 0;
                                  status.compare_exchange_strong(expected, rc);
                                }
                              });
    return status.load();
  }
};

}  // namespace

ParallelBackend& serial_backend() {
  static SerialBackend backend;
  return backend;
}

ParallelBackend& tbb_backend() {
  static TbbBackend backend;
  return backend;
}

SyncExecutor::SyncExecutor(std::shared_ptr<const Program> program) : Executor(std::move(program)) {}

std::vector<Value> SyncExecutor::run(std::span<const Value> inputs) {
  auto give_back = [this](std::unique_ptr<VirtualMachine> vm) { release(std::move(vm)); };
  BorrowedVm vm(give_back, acquire());
  vm->set_parallel_backend(&serial_backend());
  return vm->run(inputs);
}

struct TbbExecutor::Impl {
  explicit Impl(int threads) : arena(threads) {
    // TBB caps its workers at the machine's cores (and warns on stderr when an arena asks
    // for more). A thread count above that is a deliberate request: lift the cap while
    // this executor lives. (TBB applies the smallest live cap, so an executor that wants
    // fewer threads elsewhere in the process still gets what it asked for.)
    if (threads > oneapi::tbb::info::default_concurrency()) {
      allow_threads.emplace(oneapi::tbb::global_control::max_allowed_parallelism,
                            static_cast<size_t>(threads));
    }
  }
  std::optional<oneapi::tbb::global_control> allow_threads;
  oneapi::tbb::task_arena arena;
};

TbbExecutor::TbbExecutor(std::shared_ptr<const Program> program, int num_threads)
    : Executor(std::move(program)),
      impl_(std::make_unique<Impl>(num_threads > 0 ? num_threads
                                                   : oneapi::tbb::info::default_concurrency())) {
  impl_->arena.initialize();
}

TbbExecutor::~TbbExecutor() = default;

int TbbExecutor::num_threads() const { return impl_->arena.max_concurrency(); }

std::vector<Value> TbbExecutor::run(std::span<const Value> inputs) {
  auto give_back = [this](std::unique_ptr<VirtualMachine> vm) { release(std::move(vm)); };
  BorrowedVm vm(give_back, acquire());
  // One thread: kernels' parallel loops run inline, as one chunk, without TBB's per-chunk
  // scheduling (which costs more than small kernels do).
  vm->set_parallel_backend(num_threads() == 1 ? &serial_backend() : &tbb_backend());
  std::vector<Value> outputs;
  // Exceptions thrown inside arena.execute propagate to the caller.
  impl_->arena.execute([&] { outputs = vm->run(inputs); });
  return outputs;
}

}  // namespace dynvm::vm
