// How much the VM itself costs: nanoseconds per simple instruction in a tight loop, and
// VM overhead per InvokeKernel of a kernel that does nothing (with one unconditional
// variant, and with a residue-class dispatch between two variants).
//   s_per_instruction   loop of add + cmp + if: time / instructions
//   s_per_iteration     loop of invoke_kernel + add + cmp + if: time / iterations
// bench/vm_dispatch_report.py turns one run's JSON into ns per instruction and VM
// overhead per kernel call (an iteration minus three simple instructions).
#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>

#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::vm {
namespace {

constexpr int64_t kIterations = 1'000'000;

std::vector<uint8_t> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Instruction ins(Opcode op, std::vector<int64_t> args) { return Instruction{op, std::move(args)}; }

// r0 = n; r1 = i; r2 = 1; r3 = cond; r4, r5 = tensors (kernel variant only)
Executable make_loop(bool with_kernel, bool with_dispatch) {
  Executable exe;
  Function f{"main", with_kernel ? 3u : 1u, 8, {}};
  f.code.push_back(ins(Opcode::LoadImm, {3, 0}));                              // 0: i = 0
  f.code.push_back(ins(Opcode::LoadImm, {4, 1}));                              // 1: one = 1
  int64_t loop = 2;
  if (with_kernel) f.code.push_back(ins(Opcode::InvokeKernel, {0, 1, 1, 2}));  // 2
  f.code.push_back(ins(Opcode::AddI, {3, 3, 4}));
  f.code.push_back(ins(Opcode::CmpI, {5, static_cast<int64_t>(CmpKind::kLt), 3, 0}));
  int64_t ret = static_cast<int64_t>(f.code.size()) + 1;
  f.code.push_back(ins(Opcode::If, {5, loop, ret}));
  f.code.push_back(ins(Opcode::Ret, {3}));
  exe.functions.push_back(f);
  exe.inputs.push_back(TensorSpec{"n", DType::kInt64, {}});
  if (with_kernel) {
    exe.inputs.push_back(TensorSpec{"x", DType::kFloat32, {DimSpec{"n", 0, 0, INT64_MAX}}});
    exe.inputs.push_back(TensorSpec{"y", DType::kFloat32, {DimSpec{"n", 0, 0, INT64_MAX}}});
    exe.libraries.push_back(
        KernelLibrary{LibraryFormat::kSharedObject, "host", read_file(DYNVM_EMPTY_KERNELS)});
    Kernel k{"empty", 0, 1, 1, {}, ""};
    if (with_dispatch) {
      k.variants.push_back(
          KernelVariant{"empty_kernel_v16", {DimPredicate{0, 0, DimPredicateKind::kModEq, 16, 0}}});
    }
    k.variants.push_back(KernelVariant{"empty_kernel", {}});
    exe.kernels.push_back(k);
  }
  return exe;
}

void BM_SimpleInstruction(benchmark::State& state) {
  VirtualMachine vm(Program::load(make_loop(false, false)));
  std::vector<Value> args = {Value(kIterations)};
  for (auto _ : state) benchmark::DoNotOptimize(vm.invoke(0, args));
  // One add, one cmp, one if per iteration.
  double instructions = 3.0 * kIterations * state.iterations();
  state.counters["s_per_instruction"] =
      benchmark::Counter(instructions, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void kernel_call_loop(benchmark::State& state, bool with_dispatch) {
  VirtualMachine vm(Program::load(make_loop(true, with_dispatch)));
  Tensor x = Tensor::empty({32}, DType::kFloat32);
  Tensor y = Tensor::empty({32}, DType::kFloat32);
  std::vector<Value> args = {Value(kIterations), Value(x), Value(y)};
  for (auto _ : state) benchmark::DoNotOptimize(vm.invoke(0, args));
  state.counters["s_per_iteration"] = benchmark::Counter(
      static_cast<double>(kIterations) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_InvokeKernel(benchmark::State& state) { kernel_call_loop(state, false); }
void BM_InvokeKernelDispatch(benchmark::State& state) { kernel_call_loop(state, true); }

BENCHMARK(BM_SimpleInstruction)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_InvokeKernel)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_InvokeKernelDispatch)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dynvm::vm

BENCHMARK_MAIN();
