// Pieces of command-line parsing more than one tool's options share (vmtune, vmbench).
// Malformed values throw dynvm::UsageError naming the flag.
#pragma once

#include <charconv>
#include <string>
#include <utility>

#include "vm/error.h"

namespace dynvm::tools {

// A number in lo..hi: "--trials: 'x' is not a number in 1..1000000".
template <typename T>
T parse_number(const std::string& s, const std::string& flag, T lo, T hi) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    throw UsageError(str_cat(flag, ": '", s, "' is not a number in ", lo, "..", hi));
  }
  return v;
}

// --input NAME=FILE.npy, as (NAME, FILE.npy).
inline std::pair<std::string, std::string> parse_input_file(const std::string& v) {
  const size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
    throw UsageError("--input expects NAME=FILE.npy, got '" + v + "'");
  }
  return {v.substr(0, eq), v.substr(eq + 1)};
}

}  // namespace dynvm::tools
