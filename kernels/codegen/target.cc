// Target detection: what LLVM says about the host CPU, and the one-line description that
// travels with a kernel library so a reader can tell what it was compiled for.
#include "kernels/codegen/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/codegen/llvm_support.h"
#include "vm/error.h"

namespace dynvm::codegen {
namespace {

// The vector-ISA features that matter to generated kernels: these go into the description
// and decide vector_bits. The full feature string stays in Target::features.
const char* const kIsaFeatures[] = {
    "sse4.1",  "sse4.2",   "avx",      "avx2",     "fma",        "f16c",
    "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512bf16", "avx512fp16",
};

int vector_bits_for(const Target& t) {
  if (t.has_feature("avx512f")) return 512;
  if (t.has_feature("avx")) return 256;
  return 128;
}

}  // namespace

void ensure_llvm_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

const llvm::Target& lookup_llvm_target(const std::string& triple) {
  ensure_llvm_initialized();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (target == nullptr) user_error("cannot generate code for target '", triple, "': ", error);
  return *target;
}

Target Target::host() {
  ensure_llvm_initialized();
  Target t;
  t.triple = llvm::Triple::normalize(llvm::sys::getProcessTriple());
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> host_features;
  std::vector<std::string> features;
  if (llvm::sys::getHostCPUFeatures(host_features)) {
    for (const auto& f : host_features) {
      features.push_back((f.getValue() ? "+" : "-") + f.getKey().str());
    }
  }
  // Sorted so that the same machine always yields the same string (StringMap order is not).
  std::sort(features.begin(), features.end(),
            [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  for (const auto& f : features) t.features += (t.features.empty() ? "" : ",") + f;
  t.vector_bits = vector_bits_for(t);
  return t;
}

Target Target::generic(const std::string& cpu, const std::string& triple) {
  Target t;
  t.triple = llvm::Triple::normalize(triple.empty() ? llvm::sys::getProcessTriple() : triple);
  t.cpu = cpu;
  const llvm::Target& llvm_target = lookup_llvm_target(t.triple);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      llvm_target.createMCSubtargetInfo(t.triple, cpu, /*Features=*/""));
  if (sti == nullptr) user_error("unknown CPU '", cpu, "' for target ", t.triple);
  // The CPU name implies the rest; spelling out the vector ISA makes has_feature() work.
  for (const char* f : kIsaFeatures) {
    bool on = sti->checkFeatures(std::string("+") + f);
    t.features += std::string(t.features.empty() ? "" : ",") + (on ? "+" : "-") + f;
  }
  t.vector_bits = vector_bits_for(t);
  return t;
}

bool Target::has_feature(const std::string& name) const {
  const std::string needle = "+" + name;
  size_t at = 0;
  while ((at = features.find(needle, at)) != std::string::npos) {
    size_t end = at + needle.size();
    if (end == features.size() || features[end] == ',') return true;
    at = end;
  }
  return false;
}

std::string Target::description() const {
  std::string isa;
  for (const char* f : kIsaFeatures) {
    if (has_feature(f)) isa += (isa.empty() ? "" : ",") + std::string(f);
  }
  return str_cat(triple, " cpu=", cpu, " isa=", isa.empty() ? "base" : isa,
                 " vector_bits=", vector_bits);
}

}  // namespace dynvm::codegen
