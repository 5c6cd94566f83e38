#include "vm/cpu_features.h"

#include "vm/error.h"

namespace dynvm::vm {

std::optional<bool> host_has_cpu_feature(std::string_view feature) {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports takes only string literals, hence the table.
#define DYNVM_CPU_FEATURE(name) \
  if (feature == name) return __builtin_cpu_supports(name) != 0;
  DYNVM_CPU_FEATURE("sse4.1")
  DYNVM_CPU_FEATURE("sse4.2")
  DYNVM_CPU_FEATURE("avx")
  DYNVM_CPU_FEATURE("avx2")
  DYNVM_CPU_FEATURE("fma")
  DYNVM_CPU_FEATURE("avx512f")
  DYNVM_CPU_FEATURE("avx512bw")
  DYNVM_CPU_FEATURE("avx512dq")
  DYNVM_CPU_FEATURE("avx512vl")
  DYNVM_CPU_FEATURE("avx512bf16")
  DYNVM_CPU_FEATURE("avx512fp16")
#undef DYNVM_CPU_FEATURE
#endif
  return std::nullopt;
}

std::vector<std::string> target_isa_features(std::string_view target) {
  std::vector<std::string> features;
  size_t pos = target.find("isa=");
  if (pos == std::string_view::npos) return features;
  std::string_view list = target.substr(pos + 4);
  list = list.substr(0, list.find(' '));
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view f = list.substr(0, comma);
    if (!f.empty() && f != "base") features.emplace_back(f);
    if (comma == std::string_view::npos) break;
    list = list.substr(comma + 1);
  }
  return features;
}

void check_target_isa(std::string_view target, const std::string& library_name,
                      const std::function<std::optional<bool>(std::string_view)>& has_feature) {
  for (const std::string& f : target_isa_features(target)) {
    std::optional<bool> has = has_feature(f);
    if (has.has_value() && !*has) {
      user_error("kernel library ", library_name, " was compiled for a CPU with ", f, " (target '",
                 target, "'), which this machine lacks; recompile the model for this machine");
    }
  }
}

}  // namespace dynvm::vm
