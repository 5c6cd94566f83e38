// Generated-kernel throughput against the machine's peak and against oneDNN, in one run:
//   peak_fma         independent FMA chains held in registers (AVX-512, else AVX2): the
//                    per-core GFLOP/s ceiling that "% of peak" refers to
//   onednn/M/K/N     dnnl_sgemm, single thread (the binary re-executes itself with
//                    OMP_NUM_THREADS=1 so that oneDNN's OpenMP pool has one thread)
//   dynvm/...        the matmul op's default schedule (kernels/ops/matmul.h), compiled for
//                    the host and called through the kernel ABI; `static` kernels have
//                    every dim constant, `symbolic` is ONE kernel with M symbolic called at
//                    each M; threads:1 runs parallel loops inline, threads:2 in a TBB arena.
// Counters: flops (GFLOP/s via rate). bench/kernels_report.py derives the ratios.
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <unistd.h>

#ifdef DYNVM_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/codegen/library_builder.h"
#include "kernels/codegen/target.h"
#include "kernels/ops/matmul.h"
#include "vm/kernel_call.h"
#include "vm/kernel_library.h"
#include "vm/parallel.h"
#include "vm/tensor.h"

namespace {

using namespace dynvm;  // NOLINT(build/namespaces)

// ---- peak FMA ----
constexpr int64_t kFmaIters = 1 << 20;
constexpr int kChains = 12;  // > FMA latency (4) x ports (2): the FMA units never wait

// Twelve named accumulators (an array gets spilled to the stack by GCC -O2).
#define DYNVM_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iters) {
#define DYNVM_INIT(c) __m512 acc##c = _mm512_set1_ps(static_cast<float>(c) * 1e-3f);
  DYNVM_CHAINS(DYNVM_INIT)
#undef DYNVM_INIT
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i) {
#define DYNVM_STEP(c) acc##c = _mm512_fmadd_ps(acc##c, a, b);
    DYNVM_CHAINS(DYNVM_STEP)
#undef DYNVM_STEP
    // Keeps the loop from being folded; the accumulators stay in zmm registers.
#define DYNVM_KEEP(c) asm volatile("" : "+v"(acc##c));
    DYNVM_CHAINS(DYNVM_KEEP)
#undef DYNVM_KEEP
  }
  __m512 s = _mm512_setzero_ps();
#define DYNVM_SUM(c) s = _mm512_add_ps(s, acc##c);
  DYNVM_CHAINS(DYNVM_SUM)
#undef DYNVM_SUM
  float out[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Werror)
  _mm512_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iters) {
#define DYNVM_INIT(c) __m256 acc##c = _mm256_set1_ps(static_cast<float>(c) * 1e-3f);
  DYNVM_CHAINS(DYNVM_INIT)
#undef DYNVM_INIT
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i) {
#define DYNVM_STEP(c) acc##c = _mm256_fmadd_ps(acc##c, a, b);
    DYNVM_CHAINS(DYNVM_STEP)
#undef DYNVM_STEP
#define DYNVM_KEEP(c) asm volatile("" : "+x"(acc##c));
    DYNVM_CHAINS(DYNVM_KEEP)
#undef DYNVM_KEEP
  }
  __m256 s = _mm256_setzero_ps();
#define DYNVM_SUM(c) s = _mm256_add_ps(s, acc##c);
  DYNVM_CHAINS(DYNVM_SUM)
#undef DYNVM_SUM
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}
#undef DYNVM_CHAINS

void BM_PeakFma(benchmark::State& state) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int lanes = avx512 ? 16 : 8;
  for (auto _ : state) {
    float r = avx512 ? fma_chains_avx512(kFmaIters) : fma_chains_avx2(kFmaIters);
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(avx512 ? "avx512f" : "avx2");
  state.counters["flops"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kFmaIters * kChains * lanes * 2,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakFma)->Name("peak_fma")->Unit(benchmark::kMillisecond);

// ---- operands ----
struct Operands {
  vm::Tensor a, b, c;
};
Operands operands(int64_t m, int64_t k, int64_t n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto random = [&](vm::Shape shape) {
    std::vector<float> v(static_cast<size_t>(vm::shape_numel(shape)));
    for (float& x : v) x = dist(rng);
    return vm::Tensor::from_vector(v, shape, vm::DType::kFloat32);
  };
  return {random({m, k}), random({k, n}), vm::Tensor::empty({m, n}, vm::DType::kFloat32)};
}

void set_flops(benchmark::State& state, int64_t m, int64_t k, int64_t n) {
  state.counters["flops"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2.0 * m * k * n, benchmark::Counter::kIsRate);
}

#ifdef DYNVM_HAVE_DNNL
void BM_OneDnn(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  Operands x = operands(m, k, n);
  for (auto _ : state) {
    dnnl_status_t st = dnnl_sgemm('N', 'N', m, n, k, 1.0f, x.a.data_as<float>(), k,
                                  x.b.data_as<float>(), n, 0.0f, x.c.data_as<float>(), n);
    if (st != dnnl_success) state.SkipWithError("dnnl_sgemm failed");
    benchmark::ClobberMemory();
  }
  set_flops(state, m, k, n);
}
#endif

// ---- generated kernels ----
// The runtime's TBB backend, entered through an arena of `threads` threads.
class TbbArenaBackend final : public vm::ParallelBackend {
 public:
  explicit TbbArenaBackend(int threads) : arena_(threads) {}
  int32_t parallel_for(int64_t begin, int64_t end, int64_t grain, DynvmParallelBody body,
                       void* closure) override {
    int32_t status = 0;
    arena_.execute([&] { status = vm::tbb_backend().parallel_for(begin, end, grain, body, closure); });
    return status;
  }

 private:
  oneapi::tbb::task_arena arena_;
};

const std::vector<int64_t> kHiddenMs = {1, 37, 128, 512};
constexpr int64_t kHidden = 768;

std::string static_symbol(int64_t m, int64_t k, int64_t n) {
  return "mm_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
}

// Every generated kernel, built into one library on first use.
class Generated {
 public:
  static Generated& get() {
    static Generated* g = new Generated();
    return *g;
  }
  DynvmKernelFn kernel(const std::string& symbol) const { return lib_->kernel(symbol); }

 private:
  Generated() {
    auto f32 = [](std::vector<arith::Expr> s) {
      return ops::TensorType{vm::DType::kFloat32, std::move(s)};
    };
    std::vector<tir::LoweredFunc> funcs;
    funcs.push_back(ops::lower_op(ops::matmul(f32({512, 512}), f32({512, 512})), {},
                                  static_symbol(512, 512, 512)));
    for (int64_t m : kHiddenMs) {
      funcs.push_back(ops::lower_op(ops::matmul(f32({m, kHidden}), f32({kHidden, kHidden})), {},
                                    static_symbol(m, kHidden, kHidden)));
    }
    arith::Var m("m");
    funcs.push_back(ops::lower_op(ops::matmul(f32({m, kHidden}), f32({kHidden, kHidden})), {},
                                  "mm_symbolic_768"));
    codegen::BuildOptions options;
    options.dump_assembly = std::getenv("DYNVM_BENCH_DUMP_ASM") != nullptr;
    lib_ = vm::LoadedLibrary::load(
        codegen::build_library(funcs, codegen::Target::host(), options).bytes, "kernels_bench");
  }
  std::unique_ptr<vm::LoadedLibrary> lib_;
};

void run_generated(benchmark::State& state, const std::string& symbol, int64_t m, int64_t k,
                   int64_t n, int threads) {
  DynvmKernelFn fn = Generated::get().kernel(symbol);
  Operands x = operands(m, k, n);
  DLTensor args[3] = {x.a.as_dltensor(), x.b.as_dltensor(), x.c.as_dltensor()};
  std::unique_ptr<TbbArenaBackend> backend;
  vm::KernelCallContext ctx;
  if (threads > 1) {
    backend = std::make_unique<TbbArenaBackend>(threads);
    ctx.parallel = backend.get();
  }
  for (auto _ : state) {
    if (fn(args, 3, &ctx) != 0) state.SkipWithError(ctx.error.c_str());
    benchmark::ClobberMemory();
  }
  set_flops(state, m, k, n);
}

void register_all() {
  auto reg = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMicrosecond);
  };
#ifdef DYNVM_HAVE_DNNL
  benchmark::RegisterBenchmark("onednn/512/512/512", BM_OneDnn)
      ->Args({512, 512, 512})
      ->Unit(benchmark::kMicrosecond);
  for (int64_t m : kHiddenMs) {
    benchmark::RegisterBenchmark(("onednn/" + std::to_string(m) + "/768/768").c_str(), BM_OneDnn)
        ->Args({m, kHidden, kHidden})
        ->Unit(benchmark::kMicrosecond);
  }
#endif
  for (int threads : {1, 2}) {
    reg("dynvm_static/512/512/512/threads:" + std::to_string(threads),
        [threads](benchmark::State& s) {
          run_generated(s, static_symbol(512, 512, 512), 512, 512, 512, threads);
        });
  }
  for (int64_t m : kHiddenMs) {
    reg("dynvm_static/" + std::to_string(m) + "/768/768/threads:1", [m](benchmark::State& s) {
      run_generated(s, static_symbol(m, kHidden, kHidden), m, kHidden, kHidden, 1);
    });
    reg("dynvm_symbolic/" + std::to_string(m) + "/768/768/threads:1",
        [m](benchmark::State& s) { run_generated(s, "mm_symbolic_768", m, kHidden, kHidden, 1); });
  }
}

}  // namespace

int main(int argc, char** argv) {
  // oneDNN's OpenMP pool reads OMP_NUM_THREADS when the library loads: re-execute once.
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    setenv("OMP_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
  }
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
