// The compiler, start to end, as one readable list of steps (pipeline.cc):
//   import (frontends/onnx) -> [static inputs fixed] -> expand_recurrent (LSTM as a Loop)
//   -> infer_types -> lower (bytecode, kernels generated and specialized) -> a
//   vm::Executable ready for the serializer.
// `dump_after` prints the IR after a step ("import", "static", "expand_recurrent",
// "infer_types", or "all");
// `time_passes` prints each step's wall time. Both go to `log`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "vm/executable.h"

namespace dynvm::compiler {

struct PipelineOptions {
  frontends::onnx_import::ImportOptions import;  // --dim ranges
  // --static NAME=SHAPE: input NAME compiled for exactly this shape (its symbolic dims
  // become constants everywhere: a fully static executable, for comparison).
  std::map<std::string, std::vector<int64_t>> static_inputs;
  // --specialize DIM=V: extra static kernel variants for these sizes (still symbolic).
  std::vector<std::map<std::string, int64_t>> specialize;
  std::string dump_after;
  bool time_passes = false;
  std::ostream* log = nullptr;  // dumps and timings; std::cerr when null
  std::function<void(size_t, size_t, const std::string&)> progress;  // kernel compilation
  std::string producer;
};

vm::Executable compile_onnx(const std::string& model_path, const PipelineOptions& options);

}  // namespace dynvm::compiler
