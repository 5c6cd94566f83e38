// The lexer and the literal spellings of .vmasm, shared by the assembler and the
// disassembler (see asm_syntax.h).
#include "vm/asm/asm_syntax.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>

#include "vm/device.h"
#include "vm/error.h"

namespace dynvm::vm::vmasm {
namespace {

bool is_punct_char(char c) {
  return c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == '(' || c == ')' ||
         c == '=' || c == '%';
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// float32 <-> float16 / bfloat16, rounding to nearest even. NaN payloads keep their top
// bits, so a NaN printed as raw bits survives.
uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) {
    if (mant == 0) return static_cast<uint16_t>(sign | 0x7c00u);
    uint32_t payload = mant >> 13;
    return static_cast<uint16_t>(sign | 0x7c00u | (payload != 0 ? payload : 0x200u));
  }
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry may reach inf: right
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep the top payload bits, stay a NaN
    uint16_t top = static_cast<uint16_t>(x >> 16);
    return (top & 0x7fu) != 0 ? top : static_cast<uint16_t>(top | 0x40u);
  }
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// The raw bits of a value of a float part type, zero-extended.
uint64_t float_bits(DType t, const void* p) {
  switch (dtype_size(t)) {
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

void store_float_bits(DType t, uint64_t bits, void* out) {
  switch (dtype_size(t)) {
    case 2: {
      auto v = static_cast<uint16_t>(bits);
      std::memcpy(out, &v, 2);
      break;
    }
    case 4: {
      auto v = static_cast<uint32_t>(bits);
      std::memcpy(out, &v, 4);
      break;
    }
    default:
      std::memcpy(out, &bits, 8);
      break;
  }
}

// The quiet NaN that "nan" spells, per float part type.
uint64_t canonical_nan(DType t) {
  switch (t) {
    case DType::kFloat16:
      return 0x7e00u;
    case DType::kBFloat16:
      return 0x7fc0u;
    case DType::kFloat32:
      return 0x7fc00000u;
    default:
      return 0x7ff8000000000000ull;
  }
}

uint64_t sign_bit(DType t) { return uint64_t{1} << (dtype_size(t) * 8 - 1); }

// A finite or infinite value of a float part type, widened to double (exact).
double float_value(DType t, const void* p) {
  uint64_t bits = float_bits(t, p);
  switch (t) {
    case DType::kFloat16:
      return half_to_float(static_cast<uint16_t>(bits));
    case DType::kBFloat16:
      return bfloat16_to_float(static_cast<uint16_t>(bits));
    case DType::kFloat32:
      return std::bit_cast<float>(static_cast<uint32_t>(bits));
    default:
      return std::bit_cast<double>(bits);
  }
}

// Rounds a float32 to the float part type `t` and returns its bits.
uint64_t narrow_float(DType t, float f) {
  switch (t) {
    case DType::kFloat16:
      return float_to_half(f);
    case DType::kBFloat16:
      return float_to_bfloat16(f);
    default:
      return std::bit_cast<uint32_t>(f);
  }
}

std::string format_float(DType t, const void* p) {
  uint64_t bits = float_bits(t, p);
  double v = float_value(t, p);
  if (std::isnan(v)) {
    if (bits == canonical_nan(t)) return "nan";
    if (bits == (canonical_nan(t) | sign_bit(t))) return "-nan";
    char buf[32];
    std::snprintf(buf, sizeof buf, "bits:0x%0*llx", static_cast<int>(dtype_size(t) * 2),
                  static_cast<unsigned long long>(bits));
    return buf;
  }
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  if (t == DType::kFloat64) {
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
  if (t == DType::kFloat32) {
    auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
    return std::string(buf, r.ptr);
  }
  // float16 / bfloat16: the shortest decimal that rounds back to the same bits.
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    float back = 0;
    std::from_chars(buf, buf + std::strlen(buf), back);
    if (narrow_float(t, back) == bits) return buf;
  }
  auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));  // exact, always works
  return std::string(buf, r.ptr);
}

std::string parse_float(DType t, std::string_view word, void* out) {
  std::string_view w = word;
  bool negative = !w.empty() && w[0] == '-';
  std::string_view body = (!w.empty() && (w[0] == '-' || w[0] == '+')) ? w.substr(1) : w;
  if (body == "nan") {
    store_float_bits(t, canonical_nan(t) | (negative ? sign_bit(t) : 0), out);
    return "";
  }
  if (body == "inf") {
    double inf = negative ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
    if (t == DType::kFloat64)
      store_float_bits(t, std::bit_cast<uint64_t>(inf), out);
    else
      store_float_bits(t, narrow_float(t, static_cast<float>(inf)), out);
    return "";
  }
  if (w.starts_with("bits:")) {
    std::optional<uint64_t> bits = parse_uint(w.substr(5));
    if (!bits || (dtype_size(t) < 8 && *bits >> (dtype_size(t) * 8) != 0)) {
      return str_cat("'", word, "' is not a ", dtype_size(t) * 8, "-bit pattern");
    }
    store_float_bits(t, *bits, out);
    return "";
  }
  if (!body.empty() && body[0] == '+') return str_cat("'", word, "' is not a number");
  const char* begin = w.data() + (!w.empty() && w[0] == '+' ? 1 : 0);
  const char* end = w.data() + w.size();
  std::from_chars_result r;
  if (t == DType::kFloat64) {
    double d = 0;
    r = std::from_chars(begin, end, d);
    if (r.ec == std::errc() && r.ptr == end) store_float_bits(t, std::bit_cast<uint64_t>(d), out);
  } else {
    float f = 0;
    r = std::from_chars(begin, end, f);
    if (r.ec == std::errc() && r.ptr == end) {
      uint64_t bits = narrow_float(t, f);
      if (t != DType::kFloat32 && !std::isinf(f) &&
          (bits & ~sign_bit(t)) == (t == DType::kFloat16 ? 0x7c00u : 0x7f80u)) {
        return str_cat("'", word, "' is out of range for ", dtype_name(t));
      }
      store_float_bits(t, bits, out);
    }
  }
  if (r.ec == std::errc::result_out_of_range) {
    return str_cat("'", word, "' is out of range for ", dtype_name(t));
  }
  if (r.ec != std::errc() || r.ptr != end) return str_cat("'", word, "' is not a number");
  return "";
}

template <typename T>
std::string parse_integer_as(std::string_view word, DType t, void* out) {
  T v;
  if constexpr (std::is_signed_v<T>) {
    std::optional<int64_t> x = parse_int(word);
    if (!x) return str_cat("'", word, "' is not an integer");
    if (*x < std::numeric_limits<T>::min() || *x > std::numeric_limits<T>::max()) {
      return str_cat(word, " is out of range for ", dtype_name(t));
    }
    v = static_cast<T>(*x);
  } else {
    std::optional<uint64_t> x = parse_uint(word);
    if (!x) {
      if (parse_int(word)) return str_cat(word, " is out of range for ", dtype_name(t));
      return str_cat("'", word, "' is not an integer");
    }
    if (*x > std::numeric_limits<T>::max()) {
      return str_cat(word, " is out of range for ", dtype_name(t));
    }
    v = static_cast<T>(*x);
  }
  std::memcpy(out, &v, sizeof v);
  return "";
}

template <typename T>
std::string format_integer_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return std::to_string(v);
}

}  // namespace

std::vector<Token> tokenize(std::string_view text, const std::string& source_name) {
  std::vector<Token> tokens;
  int line = 1;
  size_t i = 0;
  auto fail = [&](auto&&... what) { user_error(source_name, ":", line, ": ", what...); };
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      tokens.push_back({TokenKind::kNewline, "", line});
      ++line;
      ++i;
    } else if (is_blank(c)) {
      ++i;
    } else if (c == ';') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '=' && i + 1 < text.size() && text[i + 1] == '=') {
      tokens.push_back({TokenKind::kPunct, "==", line});
      i += 2;
    } else if (is_punct_char(c)) {
      tokens.push_back({TokenKind::kPunct, std::string(1, c), line});
      ++i;
    } else if (c == '"') {
      std::string s;
      ++i;
      for (;;) {
        if (i >= text.size() || text[i] == '\n') fail("unterminated string literal");
        char ch = text[i++];
        if (ch == '"') break;
        if (ch != '\\') {
          s += ch;
          continue;
        }
        if (i >= text.size()) fail("unterminated string literal");
        char e = text[i++];
        switch (e) {
          case 'n':
            s += '\n';
            break;
          case 't':
            s += '\t';
            break;
          case 'r':
            s += '\r';
            break;
          case '0':
            s += '\0';
            break;
          case '\\':
            s += '\\';
            break;
          case '"':
            s += '"';
            break;
          case 'x': {
            int hi = i < text.size() ? hex_value(text[i]) : -1;
            int lo = i + 1 < text.size() ? hex_value(text[i + 1]) : -1;
            if (hi < 0 || lo < 0) fail("\\x in a string needs two hex digits");
            s += static_cast<char>(hi * 16 + lo);
            i += 2;
            break;
          }
          default:
            fail("unknown escape '\\", std::string(1, e), "' in a string literal");
        }
      }
      tokens.push_back({TokenKind::kString, std::move(s), line});
    } else {
      size_t start = i;
      while (i < text.size() && !is_blank(text[i]) && text[i] != '\n' && text[i] != ';' &&
             text[i] != '"' && !is_punct_char(text[i])) {
        ++i;
      }
      tokens.push_back({TokenKind::kWord, std::string(text.substr(start, i - start)), line});
    }
  }
  tokens.push_back({TokenKind::kNewline, "", line});
  tokens.push_back({TokenKind::kEnd, "", line});
  return tokens;
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '.') return false;
  }
  return true;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string name_or_quoted(std::string_view s) {
  return is_identifier(s) ? std::string(s) : quote(s);
}

std::optional<uint64_t> parse_uint(std::string_view word) {
  if (!word.empty() && word[0] == '+') word.remove_prefix(1);
  int base = 10;
  if (word.size() > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X')) {
    base = 16;
    word.remove_prefix(2);
  }
  if (word.empty()) return std::nullopt;
  uint64_t v = 0;
  auto r = std::from_chars(word.data(), word.data() + word.size(), v, base);
  if (r.ec != std::errc() || r.ptr != word.data() + word.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_int(std::string_view word) {
  bool negative = !word.empty() && word[0] == '-';
  if (negative) word.remove_prefix(1);
  if (!word.empty() && word[0] == '+') return std::nullopt;  // no "-+5"
  std::optional<uint64_t> magnitude = parse_uint(word);
  if (!magnitude) return std::nullopt;
  constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;
  if (negative) {
    if (*magnitude > kMaxMagnitude) return std::nullopt;
    return static_cast<int64_t>(0 - *magnitude);
  }
  if (*magnitude >= kMaxMagnitude) return std::nullopt;
  return static_cast<int64_t>(*magnitude);
}

std::optional<int64_t> parse_decimal(std::string_view s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return parse_int(s);
}

std::optional<int64_t> parse_prefixed_index(std::string_view word, char prefix) {
  if (word.empty() || word[0] != prefix) return std::nullopt;
  return parse_decimal(word.substr(1));
}

std::optional<std::pair<int64_t, int64_t>> parse_range(std::string_view s, bool open_ends) {
  size_t dots = s.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  std::string_view lo_text = s.substr(0, dots);
  std::string_view hi_text = s.substr(dots + 2);
  std::optional<int64_t> lo = open_ends && lo_text.empty() ? 0 : parse_int(lo_text);
  std::optional<int64_t> hi =
      open_ends && hi_text.empty() ? std::numeric_limits<int64_t>::max() : parse_int(hi_text);
  if (!lo || !hi) return std::nullopt;
  return std::pair{*lo, *hi};
}

std::string describe(const Token& t) {
  if (t.kind == TokenKind::kString) return quote(t.text);
  if (t.kind == TokenKind::kNewline) return "the end of the line";
  if (t.kind == TokenKind::kEnd) return "the end of the file";
  return str_cat("'", t.text, "'");
}

std::string_view operand_kind_name(OperandKind k) {
  static constexpr std::string_view kNames[] = {"dst",   "reg",    "int",   "const",
                                                "func",  "kernel", "label", "string",
                                                "dtype", "device", "cmp",   "reg..."};
  static_assert(std::size(kNames) == static_cast<size_t>(OperandKind::Regs) + 1);
  return kNames[static_cast<size_t>(k)];
}

std::string format_device(int64_t code) {
  int64_t type = code >> 32;
  int64_t id = code & 0xffffffff;
  if (type == static_cast<int64_t>(DeviceType::kCPU)) {
    return id == 0 ? "cpu" : str_cat("cpu:", id);
  }
  if (type == static_cast<int64_t>(DeviceType::kCUDA)) return str_cat("cuda:", id);
  return str_cat("?device(", code, ")");  // only in an unverified executable
}

std::optional<int64_t> parse_device(std::string_view word) {
  std::string_view kind = word.substr(0, word.find(':'));
  int64_t type;
  if (kind == "cpu") {
    type = static_cast<int64_t>(DeviceType::kCPU);
  } else if (kind == "cuda") {
    type = static_cast<int64_t>(DeviceType::kCUDA);
  } else {
    return std::nullopt;
  }
  int64_t id = 0;
  if (kind.size() < word.size()) {
    std::string_view digits = word.substr(kind.size() + 1);
    if (digits.empty() || digits[0] < '0' || digits[0] > '9') return std::nullopt;
    std::optional<int64_t> v = parse_int(digits);
    if (!v || *v > 0x7fffffff) return std::nullopt;
    id = *v;
  }
  return (type << 32) | id;
}

DType element_part_type(DType t) {
  if (t == DType::kComplex64) return DType::kFloat32;
  if (t == DType::kComplex128) return DType::kFloat64;
  return t;
}

int parts_per_element(DType t) { return t == DType::kComplex64 || t == DType::kComplex128 ? 2 : 1; }

std::string format_scalar(DType t, const void* p) {
  switch (t) {
    case DType::kBool: {
      uint8_t v = *static_cast<const uint8_t*>(p);
      return v == 0 ? "false" : v == 1 ? "true" : std::to_string(v);
    }
    case DType::kInt8:
      return format_integer_as<int8_t>(p);
    case DType::kInt16:
      return format_integer_as<int16_t>(p);
    case DType::kInt32:
      return format_integer_as<int32_t>(p);
    case DType::kInt64:
      return format_integer_as<int64_t>(p);
    case DType::kUInt8:
      return format_integer_as<uint8_t>(p);
    case DType::kUInt16:
      return format_integer_as<uint16_t>(p);
    case DType::kUInt32:
      return format_integer_as<uint32_t>(p);
    case DType::kUInt64:
      return format_integer_as<uint64_t>(p);
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return format_float(t, p);
    case DType::kComplex64:
    case DType::kComplex128:
      break;  // callers split complex elements into parts
  }
  return "?";
}

std::string parse_scalar(DType t, std::string_view word, void* out) {
  switch (t) {
    case DType::kBool:
      if (word == "true" || word == "false") {
        *static_cast<uint8_t*>(out) = word == "true" ? 1 : 0;
        return "";
      }
      return parse_integer_as<uint8_t>(word, t, out);
    case DType::kInt8:
      return parse_integer_as<int8_t>(word, t, out);
    case DType::kInt16:
      return parse_integer_as<int16_t>(word, t, out);
    case DType::kInt32:
      return parse_integer_as<int32_t>(word, t, out);
    case DType::kInt64:
      return parse_integer_as<int64_t>(word, t, out);
    case DType::kUInt8:
      return parse_integer_as<uint8_t>(word, t, out);
    case DType::kUInt16:
      return parse_integer_as<uint16_t>(word, t, out);
    case DType::kUInt32:
      return parse_integer_as<uint32_t>(word, t, out);
    case DType::kUInt64:
      return parse_integer_as<uint64_t>(word, t, out);
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return parse_float(t, word, out);
    case DType::kComplex64:
    case DType::kComplex128:
      break;
  }
  return "complex values are given as two parts";
}

}  // namespace dynvm::vm::vmasm
