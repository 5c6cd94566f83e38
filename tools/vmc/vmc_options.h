// vmc's command line (vmc.cc runs it). Separate so that tests can check parsing.
#pragma once

#include <optional>
#include <string>

#include "compiler/pipeline.h"
#include "frontends/onnx/importer.h"

namespace dynvm::vmc {

// The steps --dump-ir names: the import (the tool's), then the compiler's.
std::vector<std::string> step_names();

// A malformed command line throws dynvm::UsageError (exit status 2).
struct Options {
  std::string model;
  std::string output;                            // default: the model's path with .vmexe
  std::string tuning_log;                        // --tuning-log: vmtune's records
  std::string cost_model;                        // --cost-model: vmtune --fit-model's output
  std::string specialize_from;                   // --specialize-from: vmserve's shapes file
  std::optional<std::string> dump_tir;           // --dump-tir: kernels whose name has it
  frontends::onnx_import::ImportOptions import;  // --dim ranges and aliases
  compiler::CompileOptions compile;
  bool help = false;
  bool version = false;
  bool quiet = false;
};

Options parse_options(int argc, const char* const* argv);
std::string usage_text();

}  // namespace dynvm::vmc
