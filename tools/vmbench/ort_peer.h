// ONNX Runtime beside dynvm: the peer's ort_run.mjs (onnxruntime-node, CPU EP, every graph
// optimization; ../shared/peer/setup.sh installs it), run as a child process on the same
// input files, one size and thread count per call.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "vm/profile.h"

namespace dynvm::vmbench {

// `given` (--ort-run), else $DYNVM_ORT_RUN, else ../shared/peer/ort_run.mjs from the
// working directory or from the repository above the binary (build/tools/vmbench). Empty
// when none exists.
std::string find_ort_run(const std::string& given, const std::string& argv0);

struct OrtResult {
  std::optional<vm::LatencyStats> latency;  // median, p90, min, max
  std::string error;                        // one line when it failed
};

// `inputs`: input name -> .npy file; node's output goes to files in `work_dir`.
OrtResult run_ort(const std::string& ort_run, const std::string& model,
                  const std::map<std::string, std::string>& inputs, int threads, int repeat,
                  const std::filesystem::path& work_dir);

}  // namespace dynvm::vmbench
