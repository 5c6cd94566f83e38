// vmc: compiles an ONNX model into a .vmexe: the ONNX import (frontends/onnx), then the
// compiler (compiler/pipeline.h), which verifies the executable it returns. Every
// failure is one line on stderr starting with "vmc: " and a non-zero exit: 2 for a
// malformed command line, 1 for a model it cannot compile. The output file is written
// only when compilation succeeded (to a temporary name, then renamed), so a failed run
// never leaves a half-written executable behind.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "serializer/vmexe.h"
#include "tools/tool_main.h"
#include "tools/vmc/compile_model.h"
#include "tools/vmc/vmc_options.h"

namespace dynvm::vmc {
namespace {

int run(int argc, const char* const* argv) {
  Options o = parse_options(argc, argv);
  if (o.help) {
    std::cout << usage_text();
    return 0;
  }
  if (o.version) {
    std::cout << "vmc (dynvm) 0.1 (.vmexe format " << serializer::kFormatMajor << "."
              << serializer::kFormatMinor << ")\n";
    return 0;
  }
  auto start = std::chrono::steady_clock::now();
  vm::Executable exe = compile_model(o);
  std::string tmp = o.output + ".tmp";
  serializer::save_vmexe(exe, tmp);
  std::filesystem::rename(tmp, o.output);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.quiet) {
    std::fprintf(stderr, "vmc: wrote %s %s in %.1f s\n", o.output.c_str(),
                 executable_summary(exe).c_str(), s);
  }
  return 0;
}

}  // namespace
}  // namespace dynvm::vmc

int main(int argc, char** argv) {
  return dynvm::tools::tool_main("vmc", [&] { return dynvm::vmc::run(argc, argv); });
}
