// Compiles specialized ops into one kernel library plus their dispatch tables: what a
// compiler puts in an Executable's `libraries` and `kernels`.
//
//   CompiledKernels k = compile_kernels({specialize("mm", ...), specialize("add", ...)},
//                                       codegen::Target::host());
//   exe.libraries.push_back(k.library);            // at index `library_index`
//   for (auto& kernel : k.kernels) exe.kernels.push_back(kernel);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/codegen/library_builder.h"
#include "kernels/codegen/target.h"
#include "kernels/dispatch/specialize.h"

namespace dynvm::dispatch {

struct CompileOptions {
  uint32_t library_index = 0;  // the vm::Kernel::library every table refers to
  codegen::BuildOptions build;
  // Called after each variant is lowered (done, total) and once more before LLVM runs
  // with done == total; for progress displays.
  std::function<void(size_t done, size_t total, const std::string& symbol)> progress;
  // Called with each variant's lowered TIR before LLVM runs (vmc --dump-tir).
  std::function<void(const tir::LoweredFunc&)> lowered;
};

struct CompiledKernels {
  std::vector<vm::Kernel> kernels;  // one per op, in the order given
  vm::KernelLibrary library;        // every variant of every op
};

// Lowers every variant (ops::lower_op with its knobs) and builds one library. UserError
// when two ops share a name (their symbols would clash).
CompiledKernels compile_kernels(const std::vector<SpecializedOp>& ops,
                                const codegen::Target& target, const CompileOptions& options = {});

}  // namespace dynvm::dispatch
