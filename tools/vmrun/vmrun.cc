// vmrun: runs a .vmexe on inputs from .npy files or random values, and prints or saves
// its outputs; also shows a model's signature (--info) and bytecode (--disasm) and times
// it (--repeat), per kernel too (--profile). It links only the runtime and the
// serializer's reader, so it is what a machine that only runs models needs.
//
// Every failure is one line on stderr starting with "vmrun: " and a non-zero exit: 2 for
// a malformed command line, 1 for everything else (a bad model, input or file). main()
// catches everything, so no input can crash the tool or end it with an uncaught
// exception.
#include <oneapi/tbb/info.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <memory>
#include <new>
#include <optional>

#include "serializer/vmexe.h"
#include "tools/tool_main.h"
#include "tools/vmrun/cli_options.h"
#include "tools/vmrun/input_binding.h"
#include "tools/vmrun/output_report.h"
#include "vm/allocator.h"
#include "vm/asm/disassembler.h"
#include "vm/error.h"
#include "vm/executor.h"
#include "vm/program.h"
#include "vm/verifier.h"

namespace dynvm::vmrun {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot open ", path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<vm::Executor> make_executor(const Options& opts,
                                            std::shared_ptr<const vm::Program> program) {
  if (opts.sync) return std::make_unique<vm::SyncExecutor>(std::move(program));
  return std::make_unique<vm::TbbExecutor>(std::move(program), opts.threads);
}

int run(int argc, const char* const* argv) {
  Options opts = parse_options(argc, argv);
  if (opts.help) {
    std::cout << usage_text();
    return 0;
  }
  if (opts.version) {
    std::cout << version_text() << " (.vmexe format " << serializer::kFormatMajor << "."
              << serializer::kFormatMinor << ")\n";
    return 0;
  }

  vm::Executable exe = serializer::load_vmexe(opts.model);
  if (opts.info || opts.disasm) {
    // Inspection also answers "would this file load?": the verifier's verdict is part of
    // --info, and an executable it rejects is still shown before the error is reported.
    std::string rejected;
    try {
      vm::verify(exe);
    } catch (const UserError& e) {
      rejected = e.what();
    }
    if (opts.info) {
      std::vector<uint8_t> bytes = read_file(opts.model);
      std::cout << model_info(opts.model, exe, serializer::read_header(bytes))
                << "verifier:   " << (rejected.empty() ? "ok" : "rejected") << "\n";
    }
    if (opts.disasm) std::cout << vm::disassemble(exe);
    if (!rejected.empty()) throw UserError(rejected);
    if (opts.inputs.empty() && opts.output_dir.empty() && opts.repeat == 0 && !opts.profile) {
      return 0;
    }
  }

  // Load (and verify) first: a broken model is reported before any complaint about inputs.
  std::shared_ptr<const vm::Program> program = vm::Program::load(std::move(exe));
  std::vector<vm::Value> inputs = bind_inputs(program->exe(), opts.inputs, opts.seed);
  program->check_inputs(inputs);
  std::unique_ptr<vm::Executor> executor = make_executor(opts, program);

  // The first run is also the warm-up of --repeat; its outputs are the ones reported.
  // --profile covers the timed runs, or this one when there are none.
  executor->set_profiling(opts.profile && opts.repeat == 0);
  const vm::PoolStats pool_before = vm::device_allocator(vm::kCpu).stats();
  std::vector<vm::Value> results = executor->run(inputs);
  executor->set_profiling(opts.profile);
  if (opts.repeat > 0) {
    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(opts.repeat));
    for (int64_t i = 0; i < opts.repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      executor->run(inputs);
      auto end = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    }
    std::cout << latency_report(std::move(ms)) << " [" << executor->num_threads() << " thread"
              << (executor->num_threads() == 1 ? "" : "s")
              << (opts.sync ? ", sync executor" : ", tbb executor") << "]\n";
  }
  if (opts.profile) {
    executor->profile().report(std::cout, program->exe());
    // What the runs asked of the CPU memory pool (memory planning shows up here).
    const vm::PoolStats pool = vm::device_allocator(vm::kCpu).stats();
    const uint64_t runs = static_cast<uint64_t>(opts.repeat) + 1;  // the first run too
    const uint64_t requests =
        pool.device_allocs + pool.reuses - pool_before.device_allocs - pool_before.reuses;
    std::cout << "memory: " << requests / runs << " allocations per run, pool peak " << std::fixed
              << std::setprecision(1) << static_cast<double>(pool.peak_bytes) / (1 << 20)
              << " MiB\n";
  }

  std::vector<NamedOutput> outputs = collect_outputs(program->exe(), results);
  if (!opts.output_dir.empty()) {
    for (const std::string& path : write_outputs(outputs, opts.output_dir)) {
      std::cout << "wrote " << path << "\n";
    }
  } else {
    for (const NamedOutput& output : outputs) std::cout << summarize_output(output) << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace dynvm::vmrun

int main(int argc, char** argv) {
  return dynvm::tools::tool_main("vmrun", [&] { return dynvm::vmrun::run(argc, argv); });
}
