// vmrun's command line: the options it takes, their parsing and the usage text. Parsing
// only checks the shape of the command line (known options, values present and
// well-formed); whether an input name exists is for input_binding.h, which has the model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vm/error.h"

namespace dynvm::vmrun {

// One --input: `name=source`, or just `source` to bind inputs in signature order.
struct InputArg {
  std::string name;    // empty: positional
  std::string source;  // a .npy path or SHAPE:DTYPE
};

struct Options {
  std::string model;
  std::vector<InputArg> inputs;
  std::string output_dir;  // empty: print a summary of each output instead
  int64_t repeat = 0;      // 0: run once, untimed
  int threads = 0;         // <= 0: all hardware threads
  bool threads_given = false;
  bool sync = false;
  bool profile = false;
  uint64_t seed = 0;
  bool info = false;
  bool disasm = false;
  bool help = false;
  bool version = false;
};

// Throws UsageError.
Options parse_options(int argc, const char* const* argv);

std::string usage_text();
std::string_view version_text();

}  // namespace dynvm::vmrun
