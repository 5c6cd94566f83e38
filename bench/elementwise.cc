// A bandwidth-bound elementwise chain, y = relu(x + z) * 0.5 over 2^24 floats (64 MiB
// per array: far beyond the caches), in GB/s of DRAM traffic (8 bytes read + 4 written per
// element), against the machine's measured bandwidth for the same access pattern, in
// one run:
//   stream_add        y[i] = x[i] + z[i], a plain vectorized C++ loop: the ceiling
//   dynvm_fused       the chain as ONE generated kernel (the three stages inlined into
//                     the output's loop: what operator fusion produces), static shape and
//                     symbolic `n`
//   dynvm_unfused     the same chain as three generated kernels (add, relu, mul) with
//                     intermediates in memory: 3x the traffic for the same result
// threads:1 runs inline; threads:2 in a TBB arena of two threads (the reference loop
// is split in halves across the same arena).
// Counter: bytes (the chain's 12 bytes per element; a rate over wall time, bytes/s).
// bench/elementwise_report.py derives the ratios.
#include "kernels/ops/elementwise.h"

#include <benchmark/benchmark.h>
#include <oneapi/tbb/parallel_for.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/tbb_arena_backend.h"
#include "kernels/codegen/library_builder.h"
#include "kernels/codegen/target.h"
#include "kernels/ops/schedules.h"
#include "kernels/te/schedule.h"
#include "vm/kernel_call.h"
#include "vm/kernel_library.h"
#include "vm/tensor.h"

namespace {

using namespace dynvm;  // NOLINT(build/namespaces)

constexpr int64_t kN = int64_t{1} << 24;
constexpr double kBytesPerElement = 12;

// relu(x + z) * 0.5 as three TE stages, the first two inlined into the third.
ops::OpInstance fused_chain(const arith::Expr& n) {
  auto x = te::placeholder("X", {n}, vm::DType::kFloat32);
  auto z = te::placeholder("Z", {n}, vm::DType::kFloat32);
  auto sum = te::compute(
      "S", {n}, [&](const te::Indices& i) { return te::read(x, {i[0]}) + te::read(z, {i[0]}); });
  auto relu = te::compute("R", {n}, [&](const te::Indices& i) {
    return tir::max(te::read(sum, {i[0]}), tir::make_const(tir::f32(), 0));
  });
  auto y = te::compute("Y", {n}, [&](const te::Indices& i) {
    return te::read(relu, {i[0]}) * tir::make_const(tir::f32(), 0.5);
  });
  ops::OpInstance op;
  op.name = "chain";
  op.inputs = {x, z};
  op.outputs = {y};
  op.knobs = ops::injective_knobs({n});
  std::vector<ops::KnobSpec> specs = op.knobs;
  op.schedule = [specs, sum, relu, y](const ops::KnobValues& knobs) {
    te::Schedule s = te::create_schedule({y});
    s[sum].compute_inline();
    s[relu].compute_inline();
    ops::schedule_injective(s, y, ops::knob_value(specs, knobs, "vector_width"),
                            ops::knob_value(specs, knobs, "parallel") != 0);
    return s;
  };
  return op;
}

class Generated {
 public:
  static Generated& get() {
    static Generated* g = new Generated();
    return *g;
  }
  DynvmKernelFn kernel(const std::string& symbol) const { return lib_->kernel(symbol); }

 private:
  Generated() {
    arith::Var n("n");
    ops::TensorType t{vm::DType::kFloat32, {n}};
    ops::TensorType half{vm::DType::kFloat32, {arith::make_int(1)}};
    ops::KnobValues parallel{{"parallel", 1}};
    std::vector<tir::LoweredFunc> funcs = {
        ops::lower_op(fused_chain(arith::make_int(kN)), parallel, "fused_static"),
        ops::lower_op(fused_chain(n), parallel, "fused_symbolic"),
        ops::lower_op(ops::binary(ops::BinaryOp::kAdd, t, t), parallel, "add"),
        ops::lower_op(ops::unary(ops::UnaryOp::kRelu, t), parallel, "relu"),
        ops::lower_op(ops::binary(ops::BinaryOp::kMul, t, half), parallel, "mul_half"),
    };
    lib_ = vm::LoadedLibrary::load(codegen::build_library(funcs, codegen::Target::host()).bytes,
                                   "elementwise_bench");
  }
  std::unique_ptr<vm::LoadedLibrary> lib_;
};

vm::Tensor random_vector(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = dist(rng);
  return vm::Tensor::from_vector(v, {n}, vm::DType::kFloat32);
}

struct Operands {
  vm::Tensor x, z, y, t1, t2, half;
  Operands() {
    std::mt19937 rng(7);
    x = random_vector(kN, rng);
    z = random_vector(kN, rng);
    y = vm::Tensor::empty({kN}, vm::DType::kFloat32);
    t1 = vm::Tensor::empty({kN}, vm::DType::kFloat32);
    t2 = vm::Tensor::empty({kN}, vm::DType::kFloat32);
    half = vm::Tensor::from_vector(std::vector<float>{0.5f}, {1}, vm::DType::kFloat32);
  }
};

void set_bytes(benchmark::State& state) {
  state.counters["bytes"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kBytesPerElement * kN, benchmark::Counter::kIsRate);
}

void stream_add(benchmark::State& state, int threads) {
  Operands o;
  const float* __restrict x = o.x.data_as<float>();
  const float* __restrict z = o.z.data_as<float>();
  float* __restrict y = o.y.data_as<float>();
  bench::TbbArenaBackend arena(threads);
  auto chunk = [&](int64_t begin, int64_t end) {
#pragma GCC ivdep
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] + z[i];
  };
  for (auto _ : state) {
    if (threads == 1) {
      chunk(0, kN);
    } else {
      arena.execute([&] {
        oneapi::tbb::parallel_for(0, threads,
                                  [&](int t) { chunk(kN * t / threads, kN * (t + 1) / threads); });
      });
    }
    benchmark::ClobberMemory();
  }
  set_bytes(state);
}

// Runs `calls` (symbol, argument tensors) in order per iteration.
void run_generated(benchmark::State& state,
                   const std::vector<std::pair<std::string, std::vector<vm::Tensor*>>>& calls,
                   int threads) {
  bench::TbbArenaBackend arena(threads);
  vm::KernelCallContext ctx;
  if (threads > 1) ctx.parallel = &arena;
  std::vector<std::pair<DynvmKernelFn, std::vector<DLTensor>>> prepared;
  for (const auto& [symbol, tensors] : calls) {
    std::vector<DLTensor> args;
    for (vm::Tensor* t : tensors) args.push_back(t->as_dltensor());
    prepared.emplace_back(Generated::get().kernel(symbol), std::move(args));
  }
  for (auto _ : state) {
    for (auto& [fn, args] : prepared) {
      if (fn(args.data(), static_cast<int32_t>(args.size()), &ctx) != 0) {
        state.SkipWithError(ctx.error.c_str());
      }
    }
    benchmark::ClobberMemory();
  }
  set_bytes(state);
}

void register_all() {
  for (int threads : {1, 2}) {
    std::string suffix = "/threads:" + std::to_string(threads);
    auto reg = [](const std::string& name, auto fn) {
      benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMillisecond)->UseRealTime();
    };
    reg("stream_add" + suffix, [threads](benchmark::State& s) { stream_add(s, threads); });
    for (std::string variant : {"static", "symbolic"}) {
      reg("dynvm_fused/" + variant + suffix, [threads, variant](benchmark::State& s) {
        Operands o;
        run_generated(s, {{"fused_" + variant, {&o.x, &o.z, &o.y}}}, threads);
      });
    }
    reg("dynvm_unfused/symbolic" + suffix, [threads](benchmark::State& s) {
      Operands o;
      run_generated(s,
                    {{"add", {&o.x, &o.z, &o.t1}},
                     {"relu", {&o.t1, &o.t2}},
                     {"mul_half", {&o.t2, &o.half, &o.y}}},
                    threads);
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
