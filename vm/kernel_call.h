// The per-call context a kernel receives as `ctx` (opaque to it) and hands back to the
// runtime callbacks.
#pragma once

#include <string>

#include "vm/parallel.h"

namespace dynvm::vm {

struct KernelCallContext {
  ParallelBackend* parallel = nullptr;  // nullptr: serial
  std::string error;                    // set by set_error
};

}  // namespace dynvm::vm
