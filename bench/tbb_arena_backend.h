// The runtime's TBB parallel backend entered through an arena of a fixed number of
// threads, so that a benchmark's thread count does not depend on the machine's.
#pragma once

#include <oneapi/tbb/task_arena.h>

#include "vm/parallel.h"

namespace dynvm::bench {

class TbbArenaBackend final : public vm::ParallelBackend {
 public:
  explicit TbbArenaBackend(int threads) : arena_(threads) {}
  int32_t parallel_for(int64_t begin, int64_t end, int64_t grain, DynvmParallelBody body,
                       void* closure) override {
    int32_t status = 0;
    arena_.execute(
        [&] { status = vm::tbb_backend().parallel_for(begin, end, grain, body, closure); });
    return status;
  }
  template <typename F>
  void execute(F&& f) {
    arena_.execute(std::forward<F>(f));
  }

 private:
  oneapi::tbb::task_arena arena_;
};

}  // namespace dynvm::bench
