// The constants that define the .vmexe layout -- header offsets, feature bits, section
// ids, alignment -- in one place, shared by the reader, the writer and the tests that
// craft files by hand. serializer/README.md describes the same layout in prose; keep the
// two in step. Numbering here is part of the format: never renumber, only append.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace dynvm::serializer {

// ---- Fixed header (all integers little-endian) ----
inline constexpr std::string_view kMagic = "DYNVMEXE";  // 8 bytes, no terminator
inline constexpr size_t kMagicOffset = 0;
inline constexpr size_t kMajorOffset = 8;         // u16
inline constexpr size_t kMinorOffset = 10;        // u16
inline constexpr size_t kFeaturesOffset = 12;     // u64
inline constexpr size_t kPayloadSizeOffset = 20;  // u64
inline constexpr size_t kChecksumOffset = 28;     // u64
inline constexpr size_t kHeaderSize = 36;         // the payload starts here

// ---- Feature bits: what a runtime must support to run the file ----
inline constexpr uint64_t kFeatureCpuKernels = uint64_t{1} << 0;   // a SharedObject library
inline constexpr uint64_t kFeatureCudaKernels = uint64_t{1} << 1;  // a PTX or cubin library
inline constexpr uint64_t kKnownFeatures = kFeatureCpuKernels | kFeatureCudaKernels;

// ---- Sections: u32 id, u64 length, `length` bytes ----
inline constexpr size_t kSectionHeaderSize = 12;
enum class SectionId : uint32_t {
  kMeta = 1,          // target, entry, producer (1.1+)
  kStrings = 2,       // the string table
  kFunctions = 3,     // bytecode
  kConstants = 4,     // each constant's dtype, shape, file offset and size
  kKernels = 5,       // kernel table with dispatch variants
  kLibraries = 6,     // kernel libraries (native code, PTX, cubin) as bytes
  kSignature = 7,     // inputs and outputs with symbolic dims
  kConstantData = 8,  // constants' bytes, each at a kConstantAlignment file offset
};
// The sections every 1.x file has; a later minor may add optional ones.
inline constexpr SectionId kRequiredSections[] = {
    SectionId::kMeta,    SectionId::kStrings,   SectionId::kFunctions, SectionId::kConstants,
    SectionId::kKernels, SectionId::kLibraries, SectionId::kSignature, SectionId::kConstantData,
};
// "meta", "functions", ...; "unknown" for ids this runtime does not know.
std::string_view section_name(uint32_t id);

// Constants' bytes start at file offsets that are multiples of this, so a loader could
// map the file and use the constants in place (matches vm::kTensorAlignment).
inline constexpr uint64_t kConstantAlignment = 64;

// ---- Checksum ----
// 64-bit FNV-1a. The file's checksum covers the header bytes before the checksum field
// (magic through payload size) followed by the whole payload, so a flipped bit anywhere
// but in the checksum itself is caught -- including in the minor version and feature
// bits, which would otherwise be accepted silently.
inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
uint64_t fnv1a64(std::span<const uint8_t> bytes, uint64_t hash = kFnvOffsetBasis);
// The checksum a file with this header and payload must carry. `file` holds at least
// kHeaderSize bytes; the payload is everything after the header.
uint64_t file_checksum(std::span<const uint8_t> file);

// Little-endian access to the fixed header, independent of the host's byte order.
uint64_t load_le(const uint8_t* p, size_t nbytes);
void store_le(uint8_t* p, uint64_t value, size_t nbytes);

}  // namespace dynvm::serializer
