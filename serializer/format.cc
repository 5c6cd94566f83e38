// The checksum and the little-endian helpers behind the .vmexe header (format.h).
#include "serializer/format.h"

namespace dynvm::serializer {

std::string_view section_name(uint32_t id) {
  switch (static_cast<SectionId>(id)) {
    case SectionId::kMeta:
      return "meta";
    case SectionId::kStrings:
      return "strings";
    case SectionId::kFunctions:
      return "functions";
    case SectionId::kConstants:
      return "constants";
    case SectionId::kKernels:
      return "kernels";
    case SectionId::kLibraries:
      return "libraries";
    case SectionId::kSignature:
      return "signature";
    case SectionId::kConstantData:
      return "constant data";
  }
  return "unknown";
}

uint64_t fnv1a64(std::span<const uint8_t> bytes, uint64_t hash) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  for (uint8_t b : bytes) {
    hash ^= b;
    hash *= kPrime;
  }
  return hash;
}

uint64_t file_checksum(std::span<const uint8_t> file) {
  uint64_t hash = fnv1a64(file.first(kChecksumOffset));
  return fnv1a64(file.subspan(kHeaderSize), hash);
}

uint64_t load_le(const uint8_t* p, size_t nbytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < nbytes; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

void store_le(uint8_t* p, uint64_t value, size_t nbytes) {
  for (size_t i = 0; i < nbytes; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace dynvm::serializer
