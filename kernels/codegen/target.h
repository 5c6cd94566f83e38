// The machine that generated kernels are compiled for: an LLVM target triple, a CPU name,
// an explicit feature list and the vector width the code generator aims for. Target::host()
// describes the machine dynvm runs on, detected through LLVM (never assumed).
#pragma once

#include <string>

namespace dynvm::codegen {

struct Target {
  std::string triple;     // normalised LLVM triple, "x86_64-pc-linux-gnu"
  std::string cpu;        // LLVM CPU name, "sapphirerapids", "x86-64"
  std::string features;   // LLVM feature string, "+avx2,+fma,-avx512f,..." (sorted)
  int vector_bits = 128;  // widest vector registers the kernels should use

  // The host CPU: triple, CPU name and features as LLVM detects them.
  static Target host();
  // A generic target for `triple` with `cpu` and its default features (e.g. "x86-64-v3"),
  // for cross-checks on the host; vector_bits follows the ISA the CPU implies.
  static Target generic(const std::string& cpu, const std::string& triple = "");

  bool has_feature(const std::string& name) const;  // "+name" is in `features`
  // One line stored in vm::KernelLibrary::target: triple, CPU, vector ISA, vector width.
  // "x86_64-pc-linux-gnu cpu=sapphirerapids isa=avx512f,avx512bw,... vector_bits=512"
  std::string description() const;
};

}  // namespace dynvm::codegen
