// The .vmasm assembler: reads the text form of an Executable (docs/vmasm.md) and builds
// the Executable. Tests write bytecode fixtures in it; the disassembler
// (disassembler.h) prints the same language, and disassembling then assembling gives an
// equal executable (executables_equal). The assembler checks syntax and names (every
// error is a UserError "file:line: message"); the verifier (verifier.h, run by
// Program::load) checks the rest, such as call arities.
#pragma once

#include <string>
#include <string_view>

#include "vm/executable.h"

namespace dynvm::vm {

// Parses .vmasm text. `source_name` prefixes error messages
// ("prog.vmasm:12: unknown register 'rx'"). `base_dir` resolves relative paths of
// `.library` directives (the library file's bytes are embedded in the executable).
Executable assemble(std::string_view text, const std::string& source_name = "<vmasm>",
                    const std::string& base_dir = ".");

// Reads and assembles a .vmasm file; `.library` paths are relative to its directory.
Executable assemble_file(const std::string& path);

}  // namespace dynvm::vm
