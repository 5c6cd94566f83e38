// The op test harness (see op_runner.h).
#include "tests/kernels/support/op_runner.h"

#include <chrono>
#include <iostream>

#include "kernels/codegen/library_builder.h"
#include "kernels/codegen/target.h"
#include "vm/kernel_call.h"
#include "vm/parallel.h"

namespace dynvm::ops::testing {

OpLibrary OpLibrary::build(const std::vector<OpToBuild>& ops) {
  auto start = std::chrono::steady_clock::now();
  std::vector<tir::LoweredFunc> funcs;
  for (const OpToBuild& o : ops) funcs.push_back(lower_op(o.op, o.knobs, o.symbol));
  auto lowered = std::chrono::steady_clock::now();
  vm::KernelLibrary lib = codegen::build_library(funcs, codegen::Target::host());
  auto built = std::chrono::steady_clock::now();
  std::cout << "[ops] " << ops.size() << " kernels: lowering "
            << std::chrono::duration<double>(lowered - start).count() << " s, codegen "
            << std::chrono::duration<double>(built - lowered).count() << " s\n";
  OpLibrary result;
  result.library_ = vm::LoadedLibrary::load(lib.bytes, "ops_test");
  return result;
}

OpResult OpLibrary::run(const std::string& symbol, const std::vector<vm::Tensor>& args,
                        bool parallel) const {
  return run(symbol, args, parallel ? vm::tbb_backend() : vm::serial_backend());
}

OpResult OpLibrary::run(const std::string& symbol, const std::vector<vm::Tensor>& args,
                        vm::ParallelBackend& backend) const {
  DynvmKernelFn fn = library_->kernel(symbol);
  std::vector<DLTensor> dl;
  dl.reserve(args.size());
  for (const vm::Tensor& t : args) dl.push_back(t.as_dltensor());
  vm::KernelCallContext ctx;
  ctx.parallel = &backend;
  OpResult r;
  r.status = fn(dl.data(), static_cast<int32_t>(dl.size()), &ctx);
  r.error = ctx.error;
  return r;
}

}  // namespace dynvm::ops::testing
