// Helpers for tests that damage or hand-craft .vmexe files. Not for production use: a
// tool that "repairs" a checksum would hide exactly the damage the checksum is there to
// report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dynvm::serializer {

// Recomputes the header's checksum for the current header and payload, so that a test
// can hand the reader a damaged payload that passes the checksum ("re-sealed"
// corruption) and reach the decoders behind it. `bytes` holds at least the header.
void reseal_checksum(std::vector<uint8_t>& bytes);

// Where one section lies in a file.
struct SectionSpan {
  uint32_t id = 0;
  size_t header_offset = 0;  // of the section's id field, from the start of the file
  size_t body_offset = 0;    // of its first body byte
  size_t size = 0;           // body bytes
};
// The sections of a well-framed file, in file order. Validates the header like
// read_vmexe; throws UserError when the framing is broken.
std::vector<SectionSpan> list_sections(std::span<const uint8_t> file);

}  // namespace dynvm::serializer
