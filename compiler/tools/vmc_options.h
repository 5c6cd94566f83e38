// vmc's command line (vmc.cc runs it). Separate so that tests can check parsing.
#pragma once

#include <stdexcept>
#include <string>

#include "compiler/pipeline.h"

namespace dynvm::vmc {

// A malformed command line (exit status 2), as opposed to a bad model (1).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string model;
  std::string output;  // default: the model's path with .vmexe
  compiler::PipelineOptions pipeline;
  bool help = false;
  bool version = false;
  bool quiet = false;
};

Options parse_options(int argc, const char* const* argv);
std::string usage_text();

}  // namespace dynvm::vmc
