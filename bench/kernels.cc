// Generated-kernel throughput against the machine's peak and against oneDNN, in one run:
//   peak_fma         independent FMA chains held in registers (AVX-512, else AVX2): the
//                    per-core GFLOP/s ceiling that "% of peak" refers to
//   onednn/M/K/N     dnnl_sgemm, single thread (the binary re-executes itself with
//                    OMP_NUM_THREADS=1 so that oneDNN's OpenMP pool has one thread)
//   dynvm/...        the matmul op's default schedule (kernels/ops/matmul.h), compiled for
//                    the host and called through the kernel ABI; `static` kernels have
//                    every dim constant, `symbolic` is ONE kernel with M symbolic called at
//                    each M; threads:1 runs parallel loops inline, threads:2 in a TBB arena.
//   dynvm_conv/...   the conv op's default schedule (kernels/ops/conv.h) on a ResNet-style
//                    3x3 layer (N=1, 64->64 channels, 56x56, stride 1, pad 1), static and
//                    with N/H/W symbolic, single thread
//   onednn_conv/...  oneDNN's forward convolution for the same layer, single thread: `nchw`
//                    keeps our plain layout for input and output, `blocked` lets oneDNN pick
//                    its own (nChw16c); weights (and for blocked the input) are reordered
//                    once, outside the timed loop
// Counters: flops (GFLOP/s via rate). bench/kernels_report.py derives the ratios.
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
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

#include "bench/tbb_arena_backend.h"
#include "kernels/codegen/library_builder.h"
#include "kernels/codegen/target.h"
#include "kernels/ops/conv.h"
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

// ---- convolution: a ResNet-style 3x3 layer ----
struct ConvLayer {
  int64_t n = 1, c = 64, m = 64, h = 56, w = 56, k = 3, pad = 1;
  vm::Shape x_shape() const { return {n, c, h, w}; }
  vm::Shape w_shape() const { return {m, c, k, k}; }
  vm::Shape y_shape() const { return {n, m, h + 2 * pad - k + 1, w + 2 * pad - k + 1}; }
  double flops() const {
    vm::Shape y = y_shape();
    return 2.0 * static_cast<double>(vm::shape_numel(y)) * static_cast<double>(c * k * k);
  }
};
constexpr ConvLayer kResNet3x3;

vm::Tensor random_tensor(const vm::Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(static_cast<size_t>(vm::shape_numel(shape)));
  for (float& x : v) x = dist(rng);
  return vm::Tensor::from_vector(v, shape, vm::DType::kFloat32);
}

void set_conv_flops(benchmark::State& state, const ConvLayer& layer) {
  state.counters["flops"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * layer.flops(), benchmark::Counter::kIsRate);
}

#ifdef DYNVM_HAVE_DNNL
// oneDNN's C API, v2: a convolution primitive for `layer`; src/dst in `plain` nchw or in
// the layout oneDNN prefers. Inputs are reordered into the primitive's layouts up front.
void BM_OneDnnConv(benchmark::State& state, const ConvLayer& layer, bool plain) {
  auto check = [&](dnnl_status_t st, const char* what) {
    if (st != dnnl_success) state.SkipWithError(what);
    return st == dnnl_success;
  };
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  if (!check(dnnl_engine_create(&engine, dnnl_cpu, 0), "engine")) return;
  if (!check(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags), "stream")) return;
  const dnnl_dims_t src_dims = {layer.n, layer.c, layer.h, layer.w};
  const dnnl_dims_t wei_dims = {layer.m, layer.c, layer.k, layer.k};
  vm::Shape ys = layer.y_shape();
  const dnnl_dims_t dst_dims = {ys[0], ys[1], ys[2], ys[3]};
  const dnnl_dims_t strides = {1, 1}, pads = {layer.pad, layer.pad};
  const dnnl_format_tag_t act = plain ? dnnl_nchw : dnnl_format_tag_any;
  dnnl_memory_desc_t src_md, wei_md, dst_md, src_plain, wei_plain;
  dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, dnnl_f32, act);
  dnnl_memory_desc_init_by_tag(&wei_md, 4, wei_dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dnnl_f32, act);
  dnnl_memory_desc_init_by_tag(&src_plain, 4, src_dims, dnnl_f32, dnnl_nchw);
  dnnl_memory_desc_init_by_tag(&wei_plain, 4, wei_dims, dnnl_f32, dnnl_oihw);
  dnnl_convolution_desc_t desc;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t conv;
  if (!check(dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                                dnnl_convolution_direct, &src_md, &wei_md, nullptr,
                                                &dst_md, strides, pads, pads),
             "conv desc") ||
      !check(dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr), "conv pd") ||
      !check(dnnl_primitive_create(&conv, pd), "conv primitive")) {
    return;
  }
  std::mt19937 rng(42);
  vm::Tensor x = random_tensor(layer.x_shape(), rng), w = random_tensor(layer.w_shape(), rng);
  // Plain memories over our tensors, reordered into what the primitive wants.
  auto prepared = [&](const dnnl_memory_desc_t* plain_md, vm::Tensor& t, dnnl_query_t query) {
    const dnnl_memory_desc_t* want = dnnl_primitive_desc_query_md(pd, query, 0);
    dnnl_memory_t from, to;
    dnnl_memory_create(&from, plain_md, engine, t.data());
    dnnl_memory_create(&to, want, engine, DNNL_MEMORY_ALLOCATE);
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t reorder;
    dnnl_reorder_primitive_desc_create(&rpd, plain_md, engine, want, engine, nullptr);
    dnnl_primitive_create(&reorder, rpd);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    dnnl_primitive_execute(reorder, stream, 2, args);
    dnnl_stream_wait(stream);
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(from);
    return to;
  };
  dnnl_memory_t src = prepared(&src_plain, x, dnnl_query_src_md);
  dnnl_memory_t wei = prepared(&wei_plain, w, dnnl_query_weights_md);
  dnnl_memory_t dst;
  dnnl_memory_create(&dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), engine,
                     DNNL_MEMORY_ALLOCATE);
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  const char* impl = nullptr;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  for (auto _ : state) {
    if (dnnl_primitive_execute(conv, stream, 3, args) != dnnl_success) {
      state.SkipWithError("conv execute");
    }
    dnnl_stream_wait(stream);
  }
  if (impl) state.SetLabel(impl);
  set_conv_flops(state, layer);
  for (dnnl_memory_t mem : {src, wei, dst}) dnnl_memory_destroy(mem);
  dnnl_primitive_destroy(conv);
  dnnl_primitive_desc_destroy(pd);
  dnnl_stream_destroy(stream);
  dnnl_engine_destroy(engine);
}
#endif

// ---- generated kernels ----
using bench::TbbArenaBackend;

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
    const ConvLayer& l = kResNet3x3;
    ops::ConvAttrs same{{}, {l.pad, l.pad, l.pad, l.pad}, {}, 1, {}};
    ops::TensorType weights = f32({l.m, l.c, l.k, l.k});
    funcs.push_back(ops::lower_op(ops::conv(f32({l.n, l.c, l.h, l.w}), weights, std::nullopt, same),
                                  {}, "conv_static"));
    arith::Var n("n"), h("h"), w("w");
    funcs.push_back(ops::lower_op(ops::conv(f32({n, l.c, h, w}), weights, std::nullopt, same), {},
                                  "conv_symbolic"));
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

void run_generated_conv(benchmark::State& state, const std::string& symbol,
                        const ConvLayer& layer) {
  DynvmKernelFn fn = Generated::get().kernel(symbol);
  std::mt19937 rng(42);
  vm::Tensor x = random_tensor(layer.x_shape(), rng), w = random_tensor(layer.w_shape(), rng);
  vm::Tensor y = vm::Tensor::empty(layer.y_shape(), vm::DType::kFloat32);
  DLTensor args[3] = {x.as_dltensor(), w.as_dltensor(), y.as_dltensor()};
  vm::KernelCallContext ctx;  // parallel loops inline: one thread
  for (auto _ : state) {
    if (fn(args, 3, &ctx) != 0) state.SkipWithError(ctx.error.c_str());
    benchmark::ClobberMemory();
  }
  set_conv_flops(state, layer);
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
  for (bool plain : {true, false}) {
    std::string name = std::string("onednn_conv/resnet3x3_56/") + (plain ? "nchw" : "blocked");
    benchmark::RegisterBenchmark(name.c_str(), [plain](benchmark::State& s) {
      BM_OneDnnConv(s, kResNet3x3, plain);
    })->Unit(benchmark::kMicrosecond);
  }
#endif
  for (const char* kind : {"static", "symbolic"}) {
    reg(std::string("dynvm_conv/resnet3x3_56/") + kind + "/threads:1", [kind](benchmark::State& s) {
      run_generated_conv(s, std::string("conv_") + kind, kResNet3x3);
    });
  }
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
