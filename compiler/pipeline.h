// The compiler, start to end, as one readable list of steps (pipeline.cc):
//   import (frontends/onnx) -> [static inputs fixed] -> [version_entry: one copy of the
//   entry per value of a versioned dim] -> expand_recurrent (LSTM / GRU / RNN as Loops) ->
//   infer_types -> simplify (identities bypassed, data-movement chains shortened, dims in
//   canonical form) -> fold_constants -> dce -> fuse_ops (epilogue fusion) ->
//   place_devices (shape work on the host, kernels on the kernel device, copies) -> lower
//   (bytecode; memory planned: dead storages reused, static sizes in arenas; frees at last
//   use; kernels generated and specialized) -> a vm::Executable ready for the serializer.
// `dump_after` prints the IR after a step (kPipelineSteps, or "all");
// `time_passes` prints each step's wall time and what simplify, place_devices and the
// memory plan did. Both go to `log`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "frontends/onnx/importer.h"
#include "vm/device.h"
#include "vm/executable.h"

namespace dynvm::compiler {

// The steps `dump_after` may name (besides "all"), in order.
inline constexpr const char* kPipelineSteps[] = {"import",           "static",      "version_entry",
                                                 "expand_recurrent", "infer_types", "simplify",
                                                 "fold_constants",   "dce",         "fuse_ops"};

struct PipelineOptions {
  frontends::onnx_import::ImportOptions import;  // --dim ranges
  // --static NAME=SHAPE: input NAME compiled for exactly this shape (its symbolic dims
  // become constants everywhere: a fully static executable, for comparison).
  std::map<std::string, std::vector<int64_t>> static_inputs;
  // --dim NAME=V1,V2,...: dim NAME takes exactly these values; the entry is versioned by
  // them (passes/version_entry.h) and the dim's range is min(V)..max(V).
  std::map<std::string, std::vector<int64_t>> dim_versions;
  // --specialize DIM=V: extra static kernel variants for these sizes (still symbolic).
  std::vector<std::map<std::string, int64_t>> specialize;
  // fuse_ops (vmc --no-fuse turns it off, to measure what fusion gains).
  bool fuse = true;
  // Memory planning in lowering (vmc --no-plan-memory turns it off, to measure it).
  bool plan_memory = true;
  // Where kernels run (passes/place_devices.h). Only the CPU has a code generator; another
  // device is refused, with one error, where kernels would be generated.
  vm::Device kernel_device = vm::kCpu;
  std::string dump_after;
  bool time_passes = false;
  std::ostream* log = nullptr;  // dumps and timings; std::cerr when null
  std::function<void(size_t, size_t, const std::string&)> progress;  // kernel compilation
  std::string producer;
};

vm::Executable compile_onnx(const std::string& model_path, const PipelineOptions& options);

}  // namespace dynvm::compiler
