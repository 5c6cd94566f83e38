// Damaged .vmexe files: every truncation, random bit flips, and "re-sealed" damage
// whose checksum was recomputed so that it reaches the section decoders. The promise
// under test: a UserError with one clear line, never a crash, never an allocation the
// file does not justify (the sanitizer build would report either), and for damage that
// still decodes, a verifier that rejects or accepts it without crashing.
#include <gtest/gtest.h>

#include <random>

#include "serializer/format.h"
#include "serializer/testing.h"
#include "serializer/vmexe.h"
#include "tests/serializer/rich_executable.h"
#include "vm/error.h"
#include "vm/verifier.h"

namespace dynvm::serializer {
namespace {

using testing::put_le;
using testing::rich_executable;

enum class Outcome { kRefused, kLoadedButInvalid, kLoadedAndValid };

// Reads `bytes`; a refusal must be a UserError whose message starts with `prefix`.
Outcome read_and_verify(const std::vector<uint8_t>& bytes, std::string_view prefix) {
  vm::Executable exe;
  try {
    exe = read_vmexe(bytes);
  } catch (const UserError& e) {
    EXPECT_TRUE(std::string_view(e.what()).starts_with(prefix)) << e.what();
    EXPECT_EQ(std::string_view(e.what()).find('\n'), std::string_view::npos) << e.what();
    return Outcome::kRefused;
  }
  try {
    vm::verify(exe);
  } catch (const UserError& e) {
    EXPECT_TRUE(std::string_view(e.what()).starts_with("invalid executable")) << e.what();
    return Outcome::kLoadedButInvalid;
  }
  return Outcome::kLoadedAndValid;
}

class VmexeCorruption : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { file_ = new std::vector<uint8_t>(write_vmexe(rich_executable())); }
  static void TearDownTestSuite() { delete file_; }
  static const std::vector<uint8_t>& file() { return *file_; }

  static std::vector<uint8_t>* file_;
};
std::vector<uint8_t>* VmexeCorruption::file_ = nullptr;

TEST_F(VmexeCorruption, EveryTruncationIsRefused) {
  for (size_t n = 0; n < file().size(); ++n) {
    std::span<const uint8_t> prefix(file().data(), n);
    EXPECT_THROW(read_vmexe(prefix), UserError) << "truncated to " << n << " bytes";
  }
}

// Truncations whose header was patched to match: the payload size and checksum agree
// with what is left, so the section framing and decoders meet the cut.
TEST_F(VmexeCorruption, EveryResealedTruncationIsRefused) {
  for (size_t n = kHeaderSize; n < file().size(); ++n) {
    std::vector<uint8_t> bytes(file().begin(), file().begin() + static_cast<ptrdiff_t>(n));
    put_le(bytes, kPayloadSizeOffset, n - kHeaderSize, 8);
    reseal_checksum(bytes);
    EXPECT_EQ(read_and_verify(bytes, "corrupt executable: "), Outcome::kRefused)
        << "truncated to " << n << " bytes";
  }
}

TEST_F(VmexeCorruption, EveryHeaderBitFlipIsRefused) {
  for (size_t bit = 0; bit < kHeaderSize * 8; ++bit) {
    std::vector<uint8_t> bytes = file();
    bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    // Magic, version, feature, size or checksum: each has its own message.
    EXPECT_EQ(read_and_verify(bytes, ""), Outcome::kRefused) << "bit " << bit;
  }
}

TEST_F(VmexeCorruption, RandomPayloadBitFlipsFailTheChecksum) {
  std::mt19937_64 rng(20240601);
  std::uniform_int_distribution<size_t> pick_bit(kHeaderSize * 8, file().size() * 8 - 1);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = file();
    size_t bit = pick_bit(rng);
    bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    try {
      read_vmexe(bytes);
      ADD_FAILURE() << "flipping bit " << bit << " went unnoticed";
    } catch (const UserError& e) {
      EXPECT_STREQ(e.what(), "corrupt executable: checksum mismatch (the file is damaged)");
    }
  }
}

// Damage the checksum cannot see: random bit flips and byte overwrites in the payload,
// then the checksum recomputed. Much of it still decodes (a changed constant byte is a
// valid file); what matters is that nothing crashes.
TEST_F(VmexeCorruption, ResealedRandomDamageNeverCrashes) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<size_t> pick_byte(kHeaderSize, file().size() - 1);
  std::uniform_int_distribution<int> pick_count(1, 4);
  std::uniform_int_distribution<int> pick_value(0, 255);
  const uint8_t kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
  int outcomes[3] = {0, 0, 0};
  for (int i = 0; i < 4000; ++i) {
    std::vector<uint8_t> bytes = file();
    for (int k = pick_count(rng); k > 0; --k) {
      size_t at = pick_byte(rng);
      int value = pick_value(rng);
      switch (value % 3) {
        case 0:
          bytes[at] ^= static_cast<uint8_t>(1u << (value % 8));
          break;
        case 1:
          bytes[at] = static_cast<uint8_t>(value);
          break;
        default:
          bytes[at] = kInteresting[value % 5];
          break;
      }
    }
    reseal_checksum(bytes);
    ++outcomes[static_cast<int>(read_and_verify(bytes, "corrupt executable: "))];
  }
  // The damage reached all three outcomes, so the decoders were really exercised.
  EXPECT_GT(outcomes[0], 100);
  EXPECT_GT(outcomes[1], 10);
  EXPECT_GT(outcomes[2], 100);
}

// Every count and length field in the file is some 8 bytes of the payload; writing a
// huge value at every offset hits each of them. None may lead to a huge allocation.
TEST_F(VmexeCorruption, HugeValuesAtEveryOffsetAreRefusedWithoutHugeAllocations) {
  const uint64_t kHuge[] = {uint64_t{1} << 40, ~uint64_t{0}, uint64_t{1} << 31};
  int refused = 0;
  int cases = 0;
  for (uint64_t huge : kHuge) {
    for (size_t at = kHeaderSize; at + 8 <= file().size(); ++at) {
      std::vector<uint8_t> bytes = file();
      put_le(bytes, at, huge, 8);
      reseal_checksum(bytes);
      refused += read_and_verify(bytes, "corrupt executable: ") == Outcome::kRefused;
      ++cases;
    }
  }
  // Most offsets lie in constant data or library bytes, which may hold anything.
  EXPECT_GT(refused, cases / 10);
}

}  // namespace
}  // namespace dynvm::serializer
