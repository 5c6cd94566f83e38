// Reading and writing `.vmexe` files: the on-disk form of a vm::Executable.
//
// The format (documented byte by byte in serializer/README.md) is a fixed little-endian
// header -- magic, major/minor version, feature bits, payload size, checksum -- followed
// by tagged sections. Reading trusts nothing: a truncated, flipped or hostile file gives
// a dynvm::UserError with one clear line, never a crash and never an allocation larger
// than the file justifies. Reading does not run the verifier; vm::Program::load does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vm/executable.h"

namespace dynvm::serializer {

// A newer major is refused; an older minor of the same major loads, and so does a newer
// minor (its unknown sections and trailing fields are skipped).
inline constexpr uint16_t kFormatMajor = 1;
// 1.3: sequence and optional signatures; 1.4: each kernel's schedule note (tuned knobs);
// 1.5: the dispatch condition "a dim equals another argument's dim" (kind 3); 1.6: the
// opcode row_view
inline constexpr uint16_t kFormatMinor = 6;

struct WriteOptions {
  // Tests write older minors to check that they still load; must be <= kFormatMinor.
  uint16_t minor = kFormatMinor;
};

std::vector<uint8_t> write_vmexe(const vm::Executable& exe, const WriteOptions& options = {});

// Throws UserError ("corrupt executable: ...", "not a dynvm executable ...", or a
// version / feature refusal).
vm::Executable read_vmexe(std::span<const uint8_t> bytes);

// Writes a temporary file beside `path` and renames it over `path`, so a reader never
// sees a half-written file. Throws UserError on I/O failure.
void save_vmexe(const vm::Executable& exe, const std::string& path);

// Throws UserError naming `path`: "cannot open X: No such file or directory",
// "X is not a dynvm executable (bad magic)", "corrupt executable X: ...".
vm::Executable load_vmexe(const std::string& path);

// What a file says about itself, without decoding its bytecode or constants. The header
// and checksum are validated exactly as read_vmexe does.
struct FileInfo {
  uint16_t major = 0;
  uint16_t minor = 0;
  uint64_t features = 0;  // kFeature* bits (serializer/format.h)
  std::string target;
  std::string producer;  // empty for files older than format 1.1
};
FileInfo read_header(std::span<const uint8_t> bytes);

}  // namespace dynvm::serializer
