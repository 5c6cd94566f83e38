// The op test harness (see op_runner.h).
#include "tests/kernels/support/op_runner.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <chrono>
#include <iostream>

#include "kernels/codegen/library_builder.h"
#include "kernels/codegen/target.h"
#include "vm/kernel_call.h"
#include "vm/parallel.h"

namespace dynvm::ops::testing {
namespace {

// The executor's TBB backend is private to vm/executor.cc; this is the same behaviour.
class TbbParallelBackend final : public vm::ParallelBackend {
 public:
  int32_t parallel_for(int64_t begin, int64_t end, int64_t grain, DynvmParallelBody body,
                       void* closure) override {
    if (end <= begin) return 0;
    grain = std::max<int64_t>(grain, 1);
    if (end - begin <= grain) return body(begin, end, closure);
    std::atomic<int32_t> status{0};
    oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<int64_t>(begin, end, grain),
                              [&](const oneapi::tbb::blocked_range<int64_t>& r) {
                                if (status.load(std::memory_order_relaxed) != 0) return;
                                int32_t rc = body(r.begin(), r.end(), closure);
                                if (rc != 0) {
                                  int32_t expected = 0;
                                  status.compare_exchange_strong(expected, rc);
                                }
                              });
    return status.load();
  }
};

}  // namespace

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
  static TbbParallelBackend tbb_backend;
  DynvmKernelFn fn = library_->kernel(symbol);
  std::vector<DLTensor> dl;
  dl.reserve(args.size());
  for (const vm::Tensor& t : args) dl.push_back(t.as_dltensor());
  vm::KernelCallContext ctx;
  ctx.parallel = parallel ? static_cast<vm::ParallelBackend*>(&tbb_backend) : &vm::serial_backend();
  OpResult r;
  r.status = fn(dl.data(), static_cast<int32_t>(dl.size()), &ctx);
  r.error = ctx.error;
  return r;
}

}  // namespace dynvm::ops::testing
