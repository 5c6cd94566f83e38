// vmbench's command line (vmbench.cc runs it). The model and how to compile it (--dim,
// --tuning-log, ...) are vmc's options, parsed by vmc's parser.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/vmc/vmc_options.h"

namespace dynvm::vmbench {

struct Options {
  vmc::Options compile;            // the model, --dim, --tuning-log, ...
  std::vector<std::string> sizes;  // --sizes specs (tools/vmtune/size_sets.h)
  std::string sizes_from;          // --sizes-from: vmserve's shapes file (FILE[:MODEL])
  // --input NAME=FILE.npy: this value for input NAME at every size (a sample rate).
  std::map<std::string, std::string> inputs;
  std::vector<int> threads{1};  // --threads 1,2: one table per count
  int rounds = 3;
  int repeat = 20;
  bool ort = false;     // --ort: ONNX Runtime in the same rounds
  std::string ort_run;  // --ort-run PATH: the peer's ort_run.mjs (default: searched)
  std::string json;     // --json OUT
  std::string svg;      // --svg OUT
  uint64_t seed = 1;    // random inputs
  bool help = false;
  bool quiet = false;
};

Options parse_options(int argc, const char* const* argv);  // UsageError when malformed
std::string usage_text();

}  // namespace dynvm::vmbench
