// How a kernel's parallel loops run. The executor decides: the TBB executor runs them
// with tbb::parallel_for inside its task_arena; the synchronous executor runs them inline
// on the calling thread, in order, so tests are deterministic.
#pragma once

#include <cstdint>

#include "vm/kernel_abi.h"

namespace dynvm::vm {

class ParallelBackend {
 public:
  virtual ~ParallelBackend() = default;
  // Returns 0, or the first non-zero code a chunk returned.
  virtual int32_t parallel_for(int64_t begin, int64_t end, int64_t grain, DynvmParallelBody body,
                               void* closure) = 0;
};

// Runs every chunk inline, in order.
ParallelBackend& serial_backend();
// Runs chunks with tbb::parallel_for in the task arena of the calling thread (the
// TbbExecutor's arena when called from one of its runs).
ParallelBackend& tbb_backend();

}  // namespace dynvm::vm
