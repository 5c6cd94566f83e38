// Turns an ELF object into a shared object by running ld.lld as a subprocess, through
// temporary files in $TMPDIR that are always removed. The linker is the one found at
// configure time (ld.lld-16 / ld.lld), or $DYNVM_LD when set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dynvm::codegen {

// The linker that link_shared_object runs.
std::string linker_path();

// Links `object` with -shared --no-undefined: the result must not need any other library
// (no libc, no libm). UserError when the linker is missing or fails (its output included).
std::vector<uint8_t> link_shared_object(const std::vector<char>& object);

}  // namespace dynvm::codegen
