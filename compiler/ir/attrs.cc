// Attribute access and printing (see attrs.h).
#include "compiler/ir/attrs.h"

#include <cmath>
#include <cstdio>

#include "compiler/ir/tensor_text.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

const char* kind_name(const AttrValue& v) {
  static const char* const kNames[] = {"int",    "float",   "string", "ints",
                                       "floats", "strings", "tensor"};
  return kNames[v.index()];
}

template <typename T>
T get(const Attrs& attrs, const std::string& name, const T& fallback, const std::string& what,
      const char* expected) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  user_error(what, ": attribute '", name, "' is ", kind_name(it->second), ", expected ", expected);
}

std::string float_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

template <typename T, typename F>
std::string list_text(const std::vector<T>& v, F&& item) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + item(v[i]);
  return out + "]";
}

}  // namespace

int64_t attr_int(const Attrs& attrs, const std::string& name, int64_t fallback,
                 const std::string& what) {
  return get<int64_t>(attrs, name, fallback, what, "int");
}
double attr_float(const Attrs& attrs, const std::string& name, double fallback,
                  const std::string& what) {
  return get<double>(attrs, name, fallback, what, "float");
}
std::string attr_string(const Attrs& attrs, const std::string& name, const std::string& fallback,
                        const std::string& what) {
  return get<std::string>(attrs, name, fallback, what, "string");
}
std::vector<int64_t> attr_ints(const Attrs& attrs, const std::string& name,
                               const std::vector<int64_t>& fallback, const std::string& what) {
  return get<std::vector<int64_t>>(attrs, name, fallback, what, "ints");
}

std::string to_string(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return std::to_string(std::get<int64_t>(v));
    case 1:
      return float_text(std::get<double>(v));
    case 2:
      return quoted(std::get<std::string>(v));
    case 3:
      return list_text(std::get<std::vector<int64_t>>(v),
                       [](int64_t x) { return std::to_string(x); });
    case 4:
      return list_text(std::get<std::vector<double>>(v), float_text);
    case 5:
      return list_text(std::get<std::vector<std::string>>(v), quoted);
    default:
      return tensor_text(std::get<vm::Tensor>(v));
  }
}

}  // namespace dynvm::compiler
