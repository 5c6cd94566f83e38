// Byte-level reading and writing for the .vmexe sections, on top of cereal's binary
// archives. The writer side is a thin convenience. The reader side exists because
// cereal's own loaders trust the file: its std::vector / std::string loaders resize to
// whatever count the file claims, so a flipped bit could ask for 2^40 elements. Here
// every count and length is checked against the bytes that remain *before* anything is
// allocated, and every read past the end is a CorruptFile error, not a cereal exception.
#pragma once

#include <bit>
#include <cereal/archives/binary.hpp>
#include <cstdint>
#include <istream>
#include <ostream>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "vm/error.h"

namespace dynvm::serializer {

// cereal's BinaryArchive writes integers in host byte order, and the format is
// little-endian. A big-endian port must add byte swapping here rather than produce
// files that other machines misread.
static_assert(std::endian::native == std::endian::little,
              "the .vmexe format is little-endian; add byte swapping for this host");

// Raised while decoding; read_vmexe turns it into a UserError "corrupt executable ...".
class CorruptFile : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void corrupt(Args&&... args) {
  throw CorruptFile(str_cat(std::forward<Args>(args)...));
}

// An input stream buffer over borrowed bytes: no copy, and it knows how much is left.
class SpanStreamBuf : public std::streambuf {
 public:
  explicit SpanStreamBuf(std::span<const uint8_t> bytes);
  size_t position() const { return static_cast<size_t>(gptr() - eback()); }
  size_t remaining() const { return static_cast<size_t>(egptr() - gptr()); }
  // Moves the read position forward; the caller has checked `n <= remaining()`.
  void skip(size_t n);
};

// An output stream buffer that appends to a byte vector.
class VectorStreamBuf : public std::streambuf {
 public:
  std::vector<uint8_t>& bytes() { return bytes_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;

 private:
  std::vector<uint8_t> bytes_;
};

// Appends little-endian values to a byte vector through a cereal BinaryOutputArchive.
class ByteWriter {
 public:
  ByteWriter() : stream_(&buf_), archive_(stream_) {}
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  void u8(uint8_t v) { archive_(v); }
  void u16(uint16_t v) { archive_(v); }
  void u32(uint32_t v) { archive_(v); }
  void u64(uint64_t v) { archive_(v); }
  void i64(int64_t v) { archive_(v); }
  void raw(std::span<const uint8_t> bytes);
  void zeros(size_t n);
  // u64 length, then the bytes.
  void string(std::string_view s);
  void blob(std::span<const uint8_t> bytes);

  size_t size() const { return buf_.bytes().size(); }
  // Hands the bytes over; the writer is empty afterwards.
  std::vector<uint8_t> take() { return std::move(buf_.bytes()); }

 private:
  VectorStreamBuf buf_;
  std::ostream stream_;
  cereal::BinaryOutputArchive archive_;
};

// Reads values from a bounded region (one section) through a cereal BinaryInputArchive.
// `what` names the region in messages: "section 'functions': ...". Every method checks
// that its bytes are there first; `field` names what was being read.
class BoundedReader {
 public:
  BoundedReader(std::span<const uint8_t> bytes, std::string what);
  BoundedReader(const BoundedReader&) = delete;
  BoundedReader& operator=(const BoundedReader&) = delete;

  size_t remaining() const { return buf_.remaining(); }
  size_t position() const { return buf_.position(); }
  const std::string& what() const { return what_; }

  uint8_t u8(std::string_view field) { return scalar<uint8_t>(field); }
  uint16_t u16(std::string_view field) { return scalar<uint16_t>(field); }
  uint32_t u32(std::string_view field) { return scalar<uint32_t>(field); }
  uint64_t u64(std::string_view field) { return scalar<uint64_t>(field); }
  int64_t i64(std::string_view field) { return scalar<int64_t>(field); }
  // u64 length, then that many bytes; the length is checked before the allocation.
  std::string string(std::string_view field);
  std::vector<uint8_t> blob(std::string_view field);
  // The next `n` bytes, borrowed from the underlying span.
  std::span<const uint8_t> take(size_t n, std::string_view field);
  // Reads a u64 element count and checks that `count` elements of at least
  // `min_element_bytes` each can fit in what remains, so that the caller may reserve.
  size_t count(std::string_view field, size_t min_element_bytes);
  // The region must be used up, unless `allow_trailing` (a newer minor may append
  // fields this runtime does not know).
  void expect_end(bool allow_trailing);

  template <typename... Args>
  [[noreturn]] void fail(Args&&... args) const {
    corrupt(what_, ": ", std::forward<Args>(args)...);
  }

 private:
  void need(size_t n, std::string_view field) const;
  template <typename T>
  T scalar(std::string_view field) {
    need(sizeof(T), field);
    T v{};
    archive_(v);
    return v;
  }

  std::span<const uint8_t> bytes_;
  std::string what_;
  SpanStreamBuf buf_;
  std::istream stream_;
  cereal::BinaryInputArchive archive_;
};

}  // namespace dynvm::serializer
