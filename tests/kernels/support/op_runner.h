// TEST-ONLY harness for the op library: compiles OpInstances (ops::lower_op, then
// codegen::build_library for the host) into one kernel library, loads it through the
// runtime's own loader (vm::LoadedLibrary: memfd + dlopen, ABI check, init) and calls a
// kernel on vm::Tensors with a KernelCallContext whose parallel loops run on TBB (or
// inline). Each op gets its own symbol so that several variants of one op (static and
// symbolic shapes, other knobs) share a library: LLVM's O3 pipeline dominates test time.
//
//   OpLibrary lib = OpLibrary::build({{"add_sym", ops::binary(kAdd, a, b)}});
//   OpResult r = lib.run("add_sym", {x, y, out});   // inputs, then outputs (preallocated)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/ops/op.h"
#include "vm/kernel_library.h"
#include "vm/parallel.h"
#include "vm/tensor.h"

namespace dynvm::ops::testing {

struct OpToBuild {
  std::string symbol;
  OpInstance op;
  KnobValues knobs = {};
};

struct OpResult {
  int32_t status = 0;  // the kernel's return code: 0 on success
  std::string error;   // what the kernel reported through set_error
  bool ok() const { return status == 0; }
};

class OpLibrary {
 public:
  // Lowers and compiles every op; prints how long LLVM took. Throws what lowering or
  // codegen throws.
  static OpLibrary build(const std::vector<OpToBuild>& ops);

  // Calls `symbol` on `args` (inputs, then outputs, shapes and dtypes as the kernel
  // expects; it checks them). parallel: TBB backend; else inline.
  OpResult run(const std::string& symbol, const std::vector<vm::Tensor>& args,
               bool parallel = true) const;
  // The same, with the kernel's parallel loops run by `backend`.
  OpResult run(const std::string& symbol, const std::vector<vm::Tensor>& args,
               vm::ParallelBackend& backend) const;

 private:
  std::shared_ptr<vm::LoadedLibrary> library_;
};

}  // namespace dynvm::ops::testing
