// The .npy reader and writer. The header is a Python dict literal, so the reader carries a
// small parser for the subset NumPy writes (strings, ints, True/False/None, tuples, lists)
// instead of pattern-matching the text: hand-edited and foreign files (Python 2's `3L`,
// double quotes, other key orders, extra spaces) read correctly, and anything else is a
// clear error rather than a misread.
#include "vm/npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include "vm/error.h"

namespace dynvm::vm {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlignment = 64;  // where NumPy (>= 1.14) starts the data
// Bounds the parser's recursion: real headers nest two deep (a tuple in a dict).
constexpr int kMaxNesting = 32;

template <typename... Args>
[[noreturn]] void fail(std::string_view name, Args&&... what) {
  user_error("bad .npy file '", name, "': ", std::forward<Args>(what)...);
}

// A value of the Python literal subset found in .npy headers.
struct PyValue {
  enum class Kind { kStr, kInt, kBool, kNone, kTuple, kList, kDict };
  Kind kind = Kind::kNone;
  std::string str;
  int64_t i = 0;
  bool negative = false;                            // an int written with a leading '-'
  std::vector<PyValue> items;                       // tuple, list
  std::vector<std::pair<PyValue, PyValue>> fields;  // dict
};

class LiteralParser {
 public:
  LiteralParser(std::string_view text, std::string_view name) : s_(text), name_(name) {}

  PyValue parse_all() {
    PyValue v = parse(0);
    skip_space();
    if (pos_ != s_.size()) error("unexpected text after the header dict");
    return v;
  }

 private:
  [[noreturn]] void error(std::string_view what) {
    fail(name_, "malformed header (", what, " at offset ", pos_, ")");
  }

  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool eat_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    size_t end = pos_ + w.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) {
      return false;
    }
    pos_ = end;
    return true;
  }

  PyValue parse(int depth) {
    if (depth > kMaxNesting) error("nesting too deep");
    skip_space();
    if (pos_ >= s_.size()) error("unexpected end");
    char c = s_[pos_];
    PyValue v;
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::kStr;
      v.str = parse_string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Kind::kInt;
      parse_int(v);
    } else if (c == '(' || c == '[') {
      ++pos_;
      v.kind = c == '(' ? PyValue::Kind::kTuple : PyValue::Kind::kList;
      char close = c == '(' ? ')' : ']';
      bool had_comma = false;
      while (!eat(close)) {
        if (!v.items.empty() && !had_comma) error("expected ',' or a closing bracket");
        v.items.push_back(parse(depth + 1));
        had_comma = eat(',');
      }
      // "(3)" is the int 3 in Python, not a tuple; NumPy always writes "(3,)".
      if (v.kind == PyValue::Kind::kTuple && v.items.size() == 1 && !had_comma) {
        PyValue inner = std::move(v.items[0]);
        return inner;
      }
    } else if (c == '{') {
      ++pos_;
      v.kind = PyValue::Kind::kDict;
      bool had_comma = false;
      while (!eat('}')) {
        if (!v.fields.empty() && !had_comma) error("expected ',' or '}'");
        PyValue key = parse(depth + 1);
        if (!eat(':')) error("expected ':'");
        PyValue value = parse(depth + 1);
        v.fields.emplace_back(std::move(key), std::move(value));
        had_comma = eat(',');
      }
    } else if (eat_word("True")) {
      v.kind = PyValue::Kind::kBool;
      v.i = 1;
    } else if (eat_word("False")) {
      v.kind = PyValue::Kind::kBool;
    } else if (eat_word("None")) {
      v.kind = PyValue::Kind::kNone;
    } else {
      error("unexpected character");
    }
    return v;
  }

  std::string parse_string() {
    char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') {
        if (++pos_ >= s_.size()) break;
      }
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) error("unterminated string");
    ++pos_;
    return out;
  }

  void parse_int(PyValue& v) {
    if (s_[pos_] == '-') {
      v.negative = true;
      ++pos_;
    }
    size_t start = pos_;
    uint64_t value = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (__builtin_mul_overflow(value, 10u, &value) ||
          __builtin_add_overflow(value, static_cast<uint64_t>(s_[pos_] - '0'), &value) ||
          value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        error("integer too large");
      }
      ++pos_;
    }
    if (pos_ == start) error("expected digits");
    if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long
    v.i = v.negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
  }

  std::string_view s_;
  std::string_view name_;
  size_t pos_ = 0;
};

// What the fixed-size start of a file says.
struct Preamble {
  int major = 0;
  int minor = 0;
  size_t header_len = 0;
  size_t header_start = 0;  // == the preamble's size
};

// Version 1.0 has a 10-byte preamble, 2.0 and 3.0 one of 12 bytes.
constexpr size_t kMaxPreamble = 12;

Preamble parse_preamble(std::span<const uint8_t> bytes, std::string_view name) {
  if (bytes.size() < kMagicSize || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    fail(name, "not a NumPy .npy file (no \\x93NUMPY magic)");
  }
  if (bytes.size() < kMagicSize + 2) fail(name, "truncated header");
  Preamble p;
  p.major = bytes[6];
  p.minor = bytes[7];
  if (p.major < 1 || p.major > 3 || p.minor != 0) {
    fail(name, "unsupported format version ", p.major, ".", p.minor,
         " (this reader knows 1.0, 2.0 and 3.0)");
  }
  p.header_start = p.major == 1 ? 10 : 12;
  if (bytes.size() < p.header_start) fail(name, "truncated header");
  p.header_len = bytes[8] | (size_t{bytes[9]} << 8);
  if (p.major >= 2) p.header_len |= (size_t{bytes[10]} << 16) | (size_t{bytes[11]} << 24);
  return p;
}

struct Header {
  DType dtype = DType::kFloat32;
  bool big_endian = false;
  Shape shape;
  size_t data_bytes = 0;
};

std::string supported_dtypes() {
  std::string s;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (to_numpy_descr(static_cast<DType>(i))) {
      s += std::string(s.empty() ? "" : ", ") + std::string(dtype_name(static_cast<DType>(i)));
    }
  }
  return s;
}

Header parse_header(std::string_view text, std::string_view name) {
  PyValue dict = LiteralParser(text, name).parse_all();
  if (dict.kind != PyValue::Kind::kDict) fail(name, "malformed header (not a dict)");
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (const auto& [key, value] : dict.fields) {
    if (key.kind != PyValue::Kind::kStr) fail(name, "malformed header (a key is not a string)");
    const PyValue** slot = key.str == "descr"           ? &descr
                           : key.str == "fortran_order" ? &fortran
                           : key.str == "shape"         ? &shape
                                                        : nullptr;
    if (slot == nullptr) fail(name, "malformed header (unexpected key '", key.str, "')");
    if (*slot != nullptr) fail(name, "malformed header (key '", key.str, "' given twice)");
    *slot = &value;
  }
  if (descr == nullptr || fortran == nullptr || shape == nullptr) {
    fail(name, "malformed header (it needs the keys 'descr', 'fortran_order' and 'shape')");
  }

  Header h;
  if (descr->kind != PyValue::Kind::kStr) {
    fail(name, "structured (record) arrays are not supported");
  }
  std::string d = descr->str;
  if (!d.empty() && d[0] == '>') {
    h.big_endian = true;
    d[0] = '<';
  }
  std::optional<DType> dtype = from_numpy_descr(d);
  if (!dtype) {
    fail(name, "dtype '", descr->str, "' is not supported (supported: ", supported_dtypes(), ")");
  }
  h.dtype = *dtype;

  if (shape->kind != PyValue::Kind::kTuple && shape->kind != PyValue::Kind::kList) {
    // A one-element shape written without its comma, "(3)", parses as an int.
    if (shape->kind != PyValue::Kind::kInt) fail(name, "malformed header ('shape' is not a tuple)");
    h.shape.push_back(shape->i);
  } else {
    for (const PyValue& dim : shape->items) {
      if (dim.kind != PyValue::Kind::kInt) fail(name, "malformed header (a dim is not an int)");
      h.shape.push_back(dim.i);
    }
  }
  int64_t numel = 1;
  for (int64_t dim : h.shape) {
    if (dim < 0) fail(name, "negative dimension in shape ", shape_str(h.shape));
    if (__builtin_mul_overflow(numel, dim, &numel)) {
      fail(name, "shape ", shape_str(h.shape), " is too large");
    }
  }
  if (__builtin_mul_overflow(static_cast<size_t>(numel), dtype_size(h.dtype), &h.data_bytes)) {
    fail(name, "shape ", shape_str(h.shape), " is too large");
  }

  if (fortran->kind != PyValue::Kind::kBool) {
    fail(name, "malformed header ('fortran_order' is not True or False)");
  }
  // Fortran and C order lay out the same bytes when at most one dim exceeds 1.
  if (fortran->i != 0 &&
      std::count_if(h.shape.begin(), h.shape.end(), [](int64_t dim) { return dim > 1; }) > 1) {
    fail(name,
         "Fortran-ordered arrays are not supported; save a C-ordered copy "
         "(np.save(path, np.ascontiguousarray(a)))");
  }
  return h;
}

void check_data_size(const Header& h, uint64_t available, std::string_view name) {
  if (available < h.data_bytes) {
    fail(name, "truncated data: shape ", shape_str(h.shape), " ", dtype_name(h.dtype), " needs ",
         h.data_bytes, " bytes, the file has ", available);
  }
  if (available > h.data_bytes) {
    fail(name, "shape ", shape_str(h.shape), " ", dtype_name(h.dtype), " needs ", h.data_bytes,
         " bytes of data, but ", available, " follow the header");
  }
}

void byteswap_elements(Tensor& t) {
  // Complex numbers are two floats, each swapped on its own.
  size_t width = dtype_size(t.dtype());
  if (t.dtype() == DType::kComplex64 || t.dtype() == DType::kComplex128) width /= 2;
  if (width == 1) return;
  auto* p = static_cast<uint8_t*>(t.data());
  for (size_t off = 0; off + width <= t.nbytes(); off += width)
    std::reverse(p + off, p + off + width);
}

Tensor make_tensor(const Header& h, const uint8_t* data) {
  Tensor t = Tensor::empty(h.shape, h.dtype);
  if (h.data_bytes > 0) std::memcpy(t.data(), data, h.data_bytes);
  if (h.big_endian) byteswap_elements(t);
  return t;
}

// The preamble and padded header dict for `t`, as NumPy writes them.
std::string header_bytes(const Tensor& t) {
  std::optional<std::string> descr = to_numpy_descr(t.dtype());
  if (!descr)
    user_error("cannot write ", dtype_name(t.dtype()), " to .npy: NumPy has no such type");
  std::string dict = "{'descr': '" + *descr + "', 'fortran_order': False, 'shape': (";
  for (int64_t i = 0; i < t.ndim(); ++i) {
    dict += std::to_string(t.dim(i));
    dict += t.ndim() == 1 ? "," : (i + 1 < t.ndim() ? ", " : "");
  }
  dict += "), }";
  // Pad with spaces and end with '\n' so the data starts on a 64-byte boundary.
  int major = 1;
  size_t preamble = 10;
  size_t total = (preamble + dict.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
  if (total - preamble > 0xffff) {
    major = 2;
    preamble = 12;
    total = (preamble + dict.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
  }
  size_t header_len = total - preamble;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) {
    out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  }
  return out + dict;
}

Tensor on_host(const Tensor& t) {
  return t.device().type == DeviceType::kCPU ? t : t.copy_to(kCpu);
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace

Tensor parse_npy(std::span<const uint8_t> bytes, std::string_view name) {
  Preamble p = parse_preamble(bytes.first(std::min(bytes.size(), kMaxPreamble)), name);
  if (p.header_len > bytes.size() - p.header_start) fail(name, "truncated header");
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + p.header_start, p.header_len);
  Header h = parse_header(text, name);
  size_t data_start = p.header_start + p.header_len;
  check_data_size(h, bytes.size() - data_start, name);
  return make_tensor(h, bytes.data() + data_start);
}

Tensor read_npy(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory");
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) user_error("cannot open '", path, "': ", std::strerror(errno));
  uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) user_error("cannot read '", path, "': ", ec.message());

  // Read the header, then the data straight into the tensor: inputs can be large.
  uint8_t preamble_bytes[kMaxPreamble];
  size_t got = std::fread(preamble_bytes, 1, kMaxPreamble, f.get());
  Preamble p = parse_preamble(std::span<const uint8_t>(preamble_bytes, got), path);
  if (p.header_len > file_size - p.header_start) fail(path, "truncated header");
  std::string text(p.header_len, '\0');
  std::memcpy(text.data(), preamble_bytes + p.header_start,
              std::min(p.header_len, got - p.header_start));
  if (p.header_len > got - p.header_start) {
    size_t rest = p.header_len - (got - p.header_start);
    if (std::fread(text.data() + (got - p.header_start), 1, rest, f.get()) != rest) {
      fail(path, "truncated header");
    }
  } else if (std::fseek(f.get(), static_cast<long>(p.header_start + p.header_len), SEEK_SET) != 0) {
    user_error("cannot read '", path, "': ", std::strerror(errno));
  }
  Header h = parse_header(text, path);
  check_data_size(h, file_size - p.header_start - p.header_len, path);
  Tensor t = Tensor::empty(h.shape, h.dtype);
  if (h.data_bytes > 0 && std::fread(t.data(), 1, h.data_bytes, f.get()) != h.data_bytes) {
    fail(path, "truncated data (read error: ", std::strerror(errno), ")");
  }
  if (h.big_endian) byteswap_elements(t);
  return t;
}

std::vector<uint8_t> format_npy(const Tensor& tensor) {
  Tensor t = on_host(tensor);
  std::string header = header_bytes(t);
  std::vector<uint8_t> out(header.begin(), header.end());
  const auto* data = static_cast<const uint8_t*>(t.data());
  out.insert(out.end(), data, data + t.nbytes());
  return out;
}

void write_npy(const Tensor& tensor, const std::string& path) {
  Tensor t = on_host(tensor);
  std::string header = header_bytes(t);
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) user_error("cannot write '", path, "': ", std::strerror(errno));
  bool ok = std::fwrite(header.data(), 1, header.size(), f.get()) == header.size() &&
            (t.nbytes() == 0 || std::fwrite(t.data(), 1, t.nbytes(), f.get()) == t.nbytes());
  int close_status = std::fclose(f.release());
  if (!ok || close_status != 0) user_error("cannot write '", path, "': ", std::strerror(errno));
}

}  // namespace dynvm::vm
