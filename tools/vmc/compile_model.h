// What `vmc` does between its command line and the file it writes, as one call that the
// Python module (python/) makes too, so both compile a model the same way from the same
// options: read the tuning log and cost model the options name, import the ONNX model
// (from its file or from bytes), add the variants a shapes file asks for, compile.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "tools/vmc/vmc_options.h"
#include "vm/executable.h"

namespace dynvm::vmc {

// A one-line display on stderr of kernel compilation, shown once compiling has taken
// more than two seconds, and only when stderr is a terminal and `enabled`.
class CompileProgress {
 public:
  explicit CompileProgress(bool enabled);
  void update(size_t done, size_t total, const std::string& what);
  void finish();  // clears the line if it was shown

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Compiles `o.model` (a path), or `model_bytes` when it is not empty (`o.model` then only
// names the model in messages). Unless `o.quiet`, shows progress and names on stderr the
// sizes --specialize-from adds. The executable is verified. Throws UserError.
vm::Executable compile_model(Options o, std::string_view model_bytes = {});

// vmc's summary: "(12 kernels, 3 tuned, 9 ranked, 14 variants, 80 instructions)".
std::string executable_summary(const vm::Executable& exe);

}  // namespace dynvm::vmc
