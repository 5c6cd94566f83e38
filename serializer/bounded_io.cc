// Bounded reading and plain writing of .vmexe section bytes (see bounded_io.h).
#include "serializer/bounded_io.h"

#include <algorithm>

namespace dynvm::serializer {

SpanStreamBuf::SpanStreamBuf(std::span<const uint8_t> bytes) {
  // std::streambuf wants mutable pointers; this buffer never writes through them.
  char* begin = const_cast<char*>(reinterpret_cast<const char*>(bytes.data()));
  setg(begin, begin, begin + bytes.size());
}

void SpanStreamBuf::skip(size_t n) {
  // gbump takes an int; a section can be larger than that.
  while (n > 0) {
    size_t step = std::min<size_t>(n, 1u << 30);
    gbump(static_cast<int>(step));
    n -= step;
  }
}

VectorStreamBuf::int_type VectorStreamBuf::overflow(int_type ch) {
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    bytes_.push_back(static_cast<uint8_t>(traits_type::to_char_type(ch)));
  }
  return traits_type::not_eof(ch);
}

std::streamsize VectorStreamBuf::xsputn(const char* s, std::streamsize n) {
  bytes_.insert(bytes_.end(), reinterpret_cast<const uint8_t*>(s),
                reinterpret_cast<const uint8_t*>(s) + n);
  return n;
}

void ByteWriter::raw(std::span<const uint8_t> bytes) {
  if (!bytes.empty()) archive_(cereal::binary_data(bytes.data(), bytes.size()));
}

void ByteWriter::zeros(size_t n) { buf_.bytes().resize(buf_.bytes().size() + n, 0); }

void ByteWriter::string(std::string_view s) {
  u64(s.size());
  raw({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

void ByteWriter::blob(std::span<const uint8_t> bytes) {
  u64(bytes.size());
  raw(bytes);
}

BoundedReader::BoundedReader(std::span<const uint8_t> bytes, std::string what)
    : bytes_(bytes), what_(std::move(what)), buf_(bytes), stream_(&buf_), archive_(stream_) {}

void BoundedReader::need(size_t n, std::string_view field) const {
  if (n > remaining()) {
    fail("unexpected end of data reading ", field, " (", n, " bytes needed, ", remaining(),
         " left)");
  }
}

std::span<const uint8_t> BoundedReader::take(size_t n, std::string_view field) {
  need(n, field);
  std::span<const uint8_t> out = bytes_.subspan(position(), n);
  buf_.skip(n);
  return out;
}

std::string BoundedReader::string(std::string_view field) {
  uint64_t n = u64(field);
  if (n > remaining()) {
    fail(field, " claims ", n, " bytes but only ", remaining(), " are left");
  }
  std::string s(static_cast<size_t>(n), '\0');
  if (n > 0) archive_(cereal::binary_data(s.data(), s.size()));
  return s;
}

std::vector<uint8_t> BoundedReader::blob(std::string_view field) {
  uint64_t n = u64(field);
  if (n > remaining()) {
    fail(field, " claims ", n, " bytes but only ", remaining(), " are left");
  }
  std::span<const uint8_t> bytes = take(static_cast<size_t>(n), field);
  return {bytes.begin(), bytes.end()};
}

size_t BoundedReader::count(std::string_view field, size_t min_element_bytes) {
  DYNVM_INTERNAL_CHECK(min_element_bytes > 0, "an element count needs a size bound");
  uint64_t n = u64(field);
  // Division, not multiplication: n * min_element_bytes could wrap around.
  if (n > remaining() / min_element_bytes) {
    fail(n, " ", field, " cannot fit in the ", remaining(), " bytes left");
  }
  return static_cast<size_t>(n);
}

void BoundedReader::expect_end(bool allow_trailing) {
  if (remaining() != 0 && !allow_trailing) {
    fail(remaining(), " unexpected bytes at the end");
  }
}

}  // namespace dynvm::serializer
