// Which vector-ISA features the host CPU has, and the load-time check that a CPU kernel
// library only uses features this machine has. Without it, a library compiled for
// AVX-512 would die on an older CPU with SIGILL instead of a clear message.
//
// A library's target description (vm::KernelLibrary::target, written by kernels/codegen)
// carries `isa=f1,f2,...` with feature names as LLVM spells them ("avx512f", "fma").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynvm::vm {

// Whether the host CPU has `feature`; nullopt when this runtime does not know the name.
std::optional<bool> host_has_cpu_feature(std::string_view feature);

// The features listed after "isa=" in a target description ("base" or none: empty).
std::vector<std::string> target_isa_features(std::string_view target);

// Throws UserError naming the first feature of `target` that `has_feature` says is
// missing. Features it does not know (nullopt) are not held against the library.
void check_target_isa(
    std::string_view target, const std::string& library_name,
    const std::function<std::optional<bool>(std::string_view)>& has_feature =
        host_has_cpu_feature);

}  // namespace dynvm::vm
