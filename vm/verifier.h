// The bytecode verifier. Its promise: a verified executable cannot make the VM read or
// write out of bounds. Every register, jump target, constant, string, function and
// kernel index is in range; every immediate that names a dtype, device or comparison is
// valid; call and kernel arities match; no function can fall off its end; the kernel
// table's dispatch conditions name existing arguments; the entry function's parameters
// match the input signature. What remains for run time (a register holding the wrong
// kind of value, a shape that does not fit) is checked by the interpreter and reported
// as an error, never a crash.
#pragma once

#include <string>

#include "vm/executable.h"

namespace dynvm::vm {

// Limits that keep a hostile file from asking for absurd amounts of memory.
inline constexpr uint32_t kMaxRegisters = 1u << 20;
inline constexpr size_t kMaxInstructionArgs = 1u << 16;

struct VerifyOptions {
  // False for bytecode whose kernels are not generated yet (the compiler's lowering steps
  // verify what they made): kernel table entries are checked for their arity only, not
  // for variants and libraries.
  bool kernels_generated = true;
};

// Throws UserError("invalid executable: <where>: <what>") on the first violation.
void verify(const Executable& exe, const VerifyOptions& options = {});

}  // namespace dynvm::vm
