// The disassembler: prints an Executable as .vmasm text (docs/vmasm.md) for people
// (`vmrun --disasm`, test failures) and for the assembler. A header summarises the
// signature and sizes; instructions are in aligned columns with jump targets named
// L<pc> and each line's pc in a trailing comment.
//
// With every constant printed in full (max_constant_elements = kUnlimited) and the
// library bytes shown, assemble(disassemble(exe)) gives an executable equal to exe
// (executables_equal). Otherwise large constants print as `= ... (N elements)` and
// library bytes as `= ...`, which the assembler refuses with a message saying so.
// An executable that fails verification is printed as well as it can be (bad indices
// as #N, bad immediates as ?...), but need not reassemble.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include "vm/executable.h"

namespace dynvm::vm {

struct DisasmOptions {
  static constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();
  // Constants with more elements are abbreviated.
  size_t max_constant_elements = 16;
  // Print kernel libraries' bytes in hex (else only their size and target).
  bool show_library_bytes = false;
};

std::string disassemble(const Executable& exe, const DisasmOptions& options = {});

}  // namespace dynvm::vm
