#include "kernels/tune/measure_worker.h"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <ostream>
#include <random>

#include "kernels/tune/measure_protocol.h"
#include "vm/error.h"
#include "vm/kernel_call.h"
#include "vm/kernel_library.h"
#include "vm/tensor.h"

namespace dynvm::tune {
namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot read ", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Small values every kernel accepts: floats in [-1, 1], integers in [0, 3] (in range as
// indices of any non-empty axis of 4 or more), booleans either way.
void fill_random(vm::Tensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 3);
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case vm::DType::kFloat32:
      for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = static_cast<float>(real(rng));
      return;
    case vm::DType::kFloat64:
      for (int64_t i = 0; i < n; ++i) t.data_as<double>()[i] = real(rng);
      return;
    case vm::DType::kComplex64:
      for (int64_t i = 0; i < 2 * n; ++i) t.data_as<float>()[i] = static_cast<float>(real(rng));
      return;
    case vm::DType::kComplex128:
      for (int64_t i = 0; i < 2 * n; ++i) t.data_as<double>()[i] = real(rng);
      return;
    case vm::DType::kFloat16:  // 1.0, 0.5, -1.0, 0.0 as IEEE half bits
    case vm::DType::kBFloat16: {
      const bool half = t.dtype() == vm::DType::kFloat16;
      const uint16_t values[] = {static_cast<uint16_t>(half ? 0x3C00 : 0x3F80),
                                 static_cast<uint16_t>(half ? 0x3800 : 0x3F00),
                                 static_cast<uint16_t>(half ? 0xBC00 : 0xBF80), 0};
      for (int64_t i = 0; i < n; ++i) t.data_as<uint16_t>()[i] = values[small(rng)];
      return;
    }
    case vm::DType::kBool:
      for (int64_t i = 0; i < n; ++i) t.data_as<uint8_t>()[i] = small(rng) & 1;
      return;
    default: {  // integers of any width, little-endian: the low byte carries the value
      const size_t width = vm::dtype_size(t.dtype());
      auto* bytes = t.data_as<uint8_t>();
      std::memset(bytes, 0, t.nbytes());
      for (int64_t i = 0; i < n; ++i)
        bytes[static_cast<size_t>(i) * width] = static_cast<uint8_t>(small(rng));
      return;
    }
  }
}

// A candidate's output against the reference's: floats within a tolerance that allows
// another summation order (tiles, unrolling), everything else bit for bit. Empty: equal.
std::string compare(const vm::Tensor& got, const vm::Tensor& want) {
  const int64_t n = want.numel();
  auto close = [&](auto* g, auto* w, int64_t count) -> std::string {
    double scale = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (std::isfinite(static_cast<double>(w[i]))) {
        scale = std::max(scale, std::abs(static_cast<double>(w[i])));
      }
    }
    for (int64_t i = 0; i < count; ++i) {
      const double a = static_cast<double>(g[i]), b = static_cast<double>(w[i]);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      if (std::abs(a - b) <= 1e-3 * std::abs(b) + 1e-4 * scale + 1e-6) continue;
      return str_cat("element ", i, " is ", a, ", the default schedule's ", b);
    }
    return "";
  };
  switch (want.dtype()) {
    case vm::DType::kFloat32:
      return close(got.data_as<float>(), want.data_as<float>(), n);
    case vm::DType::kFloat64:
      return close(got.data_as<double>(), want.data_as<double>(), n);
    case vm::DType::kComplex64:
      return close(got.data_as<float>(), want.data_as<float>(), 2 * n);
    case vm::DType::kComplex128:
      return close(got.data_as<double>(), want.data_as<double>(), 2 * n);
    default:
      if (std::memcmp(got.data_as<uint8_t>(), want.data_as<uint8_t>(), want.nbytes()) != 0) {
        return "its output differs from the default schedule's";
      }
      return "";
  }
}

class Worker {
 public:
  Worker(MeasureRequest request, std::unique_ptr<vm::LoadedLibrary> library)
      : request_(std::move(request)), library_(std::move(library)), args_(request_.sizes.size()) {
    ctx_.parallel = request_.threads > 1 ? &vm::tbb_backend() : &vm::serial_backend();
  }

  MeasureResult run(size_t symbol, size_t size) {
    MeasureResult r{symbol, size, 0, ""};
    try {
      prepare(size);
      std::vector<vm::Tensor>& args = args_[size];
      DynvmKernelFn fn = library_->kernel(request_.symbols[symbol]);
      // Poisoned outputs: a kernel that skips elements is caught by the check.
      for (size_t i = request_.num_inputs; i < args.size(); ++i) {
        std::memset(args[i].data_as<uint8_t>(), 0x7f, args[i].nbytes());
      }
      call(fn, args);
      for (size_t i = request_.num_inputs; i < args.size(); ++i) {
        std::string diff = compare(args[i], reference_[size][i - request_.num_inputs]);
        if (!diff.empty()) {
          r.error = str_cat("wrong result: output ", i - request_.num_inputs, " ", diff);
          return r;
        }
      }
      std::vector<double> times;
      double total_ms = 0;
      while (static_cast<int>(times.size()) < request_.min_repeat ||
             (total_ms < request_.min_time_ms &&
              static_cast<int>(times.size()) < request_.max_repeat)) {
        auto start = std::chrono::steady_clock::now();
        call(fn, args);
        const double ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                .count();
        times.push_back(ns);
        total_ms += ns / 1e6;
      }
      std::nth_element(times.begin(), times.begin() + static_cast<ptrdiff_t>(times.size() / 2),
                       times.end());
      r.ns = times[times.size() / 2];
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    return r;
  }

 private:
  void call(DynvmKernelFn fn, std::vector<vm::Tensor>& args) {
    std::vector<DLTensor> dl;
    dl.reserve(args.size());
    for (vm::Tensor& t : args) dl.push_back(t.as_dltensor());
    ctx_.error.clear();
    const int32_t status = fn(dl.data(), static_cast<int32_t>(dl.size()), &ctx_);
    if (status != 0)
      user_error("the kernel failed: ",
                 ctx_.error.empty() ? str_cat("status ", status) : ctx_.error);
  }

  // The size's arguments and the reference's outputs, made on first use.
  void prepare(size_t size) {
    if (!args_[size].empty()) return;
    std::mt19937_64 rng(1234 + size);
    std::vector<vm::Tensor> args;
    for (size_t i = 0; i < request_.arg_dtypes.size(); ++i) {
      args.push_back(vm::Tensor::empty(request_.sizes[size][i], request_.arg_dtypes[i]));
      if (i < request_.num_inputs) fill_random(args.back(), rng);
    }
    call(library_->kernel(request_.symbols[0]), args);
    std::vector<vm::Tensor>& reference = reference_[size];
    for (size_t i = request_.num_inputs; i < args.size(); ++i) {
      reference.push_back(vm::Tensor::empty(args[i].shape(), args[i].dtype()));
      std::memcpy(reference.back().data_as<uint8_t>(), args[i].data_as<uint8_t>(),
                  args[i].nbytes());
    }
    args_[size] = std::move(args);
  }

  MeasureRequest request_;
  std::unique_ptr<vm::LoadedLibrary> library_;
  std::vector<std::vector<vm::Tensor>> args_;  // per size
  std::map<size_t, std::vector<vm::Tensor>> reference_;
  vm::KernelCallContext ctx_;
};

}  // namespace

int run_measure_worker(const std::string& request_path, const std::string& library_path,
                       std::ostream& out, std::ostream& err) {
  MeasureRequest request;
  std::unique_ptr<vm::LoadedLibrary> library;
  try {
    std::vector<uint8_t> text = read_file(request_path);
    request = parse_request(std::string(text.begin(), text.end()));
    library = vm::LoadedLibrary::load(read_file(library_path), "tuning_candidates");
  } catch (const std::exception& e) {
    err << "measure worker: " << e.what() << "\n";
    return 1;
  }
  oneapi::tbb::task_arena arena(std::max(request.threads, 1));
  arena.execute([&] {
    Worker worker(request, std::move(library));
    for (const auto& [symbol, size] : request.jobs) {
      out << format_result(worker.run(symbol, size)) << std::endl;  // flushed: see the protocol
    }
  });
  return 0;
}

}  // namespace dynvm::tune
