// Executables for the serializer tests: one that uses every part of the format (every
// operand kind, constants of many dtypes including a 0-dim scalar and an empty tensor,
// every dispatch predicate kind, CPU and CUDA libraries, symbolic and constant dims),
// and a minimal one. Both pass the verifier, so a test can tell "the file was damaged"
// apart from "the fixture was wrong".
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vm/executable.h"

namespace dynvm::serializer::testing {

vm::Executable rich_executable();
vm::Executable minimal_executable();

// Little-endian access to file bytes, for tests that patch or parse a file by hand.
uint64_t get_le(std::span<const uint8_t> bytes, size_t offset, size_t nbytes);
void put_le(std::vector<uint8_t>& bytes, size_t offset, uint64_t value, size_t nbytes);

}  // namespace dynvm::serializer::testing
