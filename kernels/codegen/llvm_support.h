// Small LLVM plumbing shared by the code generator's files: one-time target initialisation
// and subtarget queries. Internal to kernels/codegen (includes LLVM headers).
#pragma once

#include <string>

namespace llvm {
class Target;
}  // namespace llvm

namespace dynvm::codegen {

// Registers the native target, its MC layer and asm printer with LLVM (once per process).
void ensure_llvm_initialized();

// The LLVM target for `triple`; UserError when this LLVM cannot generate code for it.
const llvm::Target& lookup_llvm_target(const std::string& triple);

}  // namespace dynvm::codegen
