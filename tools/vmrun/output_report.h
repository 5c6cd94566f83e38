// What vmrun prints and writes: the --info text, each output (as a .npy file or a short
// summary) and the --repeat latency line. Kept apart from vmrun.cc so main() reads as the
// sequence of steps.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "serializer/vmexe.h"
#include "vm/executable.h"
#include "vm/value.h"

namespace dynvm::vmrun {

// One output as a host tensor, named for files and printing.
struct NamedOutput {
  std::string name;
  vm::Tensor tensor;
};

// Names the outputs after the signature ("output<i>" where it has none), flattens nested
// tuples ("<name>.<j>"), turns integers and shapes into int64 tensors and copies device
// tensors to the host. Throws UserError for a value that is not data (a storage).
std::vector<NamedOutput> collect_outputs(const vm::Executable& exe,
                                         std::span<const vm::Value> values);

// "y: f32 [2, 3] = [0.5, -1, ...]  min -1  max 0.5  mean 0.1".
std::string summarize_output(const NamedOutput& output);

// Writes DIR/<name>.npy for each output (creating DIR); returns the paths written. Names
// that are not safe as file names have their other characters replaced by '_'.
std::vector<std::string> write_outputs(std::span<const NamedOutput> outputs,
                                       const std::string& dir);

// The --info text.
std::string model_info(const std::string& path, const vm::Executable& exe,
                       const serializer::FileInfo& file);

// "latency over N runs (after 1 warm-up): median A ms, p90 B ms, min C ms, max D ms".
std::string latency_report(std::vector<double> ms);

}  // namespace dynvm::vmrun
