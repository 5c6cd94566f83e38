// The kernel-library builder: lowered TIR functions in, a loadable kernel library out.
//
//   vm::KernelLibrary lib = codegen::build_library(funcs, codegen::Target::host());
//   exe.libraries.push_back(lib);   // each kernel is exported under its PrimFunc's name
//
// All kernels go into one LLVM module, which gets the ABI symbols of vm/kernel_abi.h
// (dynvm_kernel_abi_version, dynvm_library_init), runs LLVM's O3 pipeline for the target
// CPU, becomes an ELF object in memory and is linked by ld.lld into a self-contained shared
// object (no libc, no libm). The runtime loads it from memory (vm/kernel_library.h).
#pragma once

#include <ostream>
#include <vector>

#include "kernels/codegen/target.h"
#include "kernels/tir/stmt.h"
#include "vm/executable.h"

namespace dynvm::codegen {

struct BuildOptions {
  bool dump_llvm_ir = false;     // the module before and after optimisation
  bool dump_assembly = false;    // the target assembly
  std::ostream* dump = nullptr;  // where dumps go; std::cerr when null
  int opt_level = 3;             // 0..3, LLVM's pipelines O0..O3
};

// Compiles `funcs` (flattened TIR with outlined parallel regions) into one shared object.
// Throws UserError when the target is unsupported or linking fails, InternalError when the
// TIR is malformed for code generation (e.g. not flattened).
vm::KernelLibrary build_library(const std::vector<tir::LoweredFunc>& funcs, const Target& target,
                                const BuildOptions& options = {});

}  // namespace dynvm::codegen
