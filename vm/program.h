// A Program is a verified Executable with its kernel libraries loaded and every kernel
// variant resolved to a function pointer. It is immutable and shared (shared_ptr) by all
// VMs and threads that run it.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vm/executable.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_library.h"
#include "vm/value.h"

namespace dynvm::vm {

struct ResolvedKernel {
  std::vector<DynvmKernelFn> variants;  // parallel to Kernel::variants
  // The (arg, axis) pairs any variant's conditions read: the dispatch cache key.
  std::vector<std::pair<uint32_t, uint32_t>> key_dims;
};

class Program {
 public:
  // Verifies `exe` (verifier.h) and loads its kernel libraries. Throws UserError.
  static std::shared_ptr<const Program> load(Executable exe);
  ~Program();

  const Executable& exe() const { return exe_; }
  const ResolvedKernel& kernel(size_t index) const { return kernels_[index]; }

  // Index of the input named `name`, or -1.
  int64_t input_index(std::string_view name) const;
  // Checks inputs against the signature: count, dtype, rank, constant dims, symbolic
  // ranges, and that a symbol has one value across all inputs. Throws UserError with one
  // line naming the input and dim.
  void check_inputs(std::span<const Value> inputs) const;

 private:
  explicit Program(Executable exe) : exe_(std::move(exe)) {}
  Executable exe_;
  std::vector<std::unique_ptr<LoadedLibrary>> libraries_;
  std::vector<ResolvedKernel> kernels_;
};

}  // namespace dynvm::vm
