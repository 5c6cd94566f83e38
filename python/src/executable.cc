// See executable.h.
#include "python/src/executable.h"

#include <chrono>
#include <filesystem>

#include "python/src/feeds.h"
#include "python/src/results.h"
#include "serializer/vmexe.h"
#include "vm/error.h"

namespace dynvm::python {

Executable::Executable(vm::Executable exe) : program_(vm::Program::load(std::move(exe))) {
  for (const vm::Tensor& c : program_->exe().constants) {
    if (c.defined()) constants_.insert(c.storage().get());
  }
  const std::vector<vm::TensorSpec>& outputs = program_->exe().outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    output_names_.push_back(outputs[i].name.empty() ? str_cat("output", i) : outputs[i].name);
  }
}

vm::Executor& Executable::executor(std::optional<int> threads) {
  const int n = threads.value_or(0);
  if (threads && n < 1) user_error("threads must be at least 1, not ", n);
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<vm::Executor>& e = executors_[n];
  if (!e) e = std::make_unique<vm::TbbExecutor>(program_, n);
  return *e;
}

std::unique_ptr<PreparedFeeds> Executable::bind(py::handle feeds) const {
  return std::make_unique<PreparedFeeds>(PreparedFeeds{this, bind_feeds(exe(), feeds)});
}

const BoundFeeds& Executable::resolve(py::handle feeds, BoundFeeds& scratch) const {
  if (py::isinstance<PreparedFeeds>(feeds)) {
    const PreparedFeeds& p = feeds.cast<const PreparedFeeds&>();
    if (p.owner != this) user_error("these inputs were bound for another executable");
    return p.bound;
  }
  scratch = bind_feeds(exe(), feeds);
  return scratch;
}

py::dict Executable::run(py::handle feeds, std::optional<int> threads) {
  BoundFeeds scratch;
  const BoundFeeds& b = resolve(feeds, scratch);
  vm::Executor& ex = executor(threads);
  std::vector<vm::Value> results;
  {
    py::gil_scoped_release no_gil;
    results = ex.run(b.values);
  }
  const std::vector<vm::TensorSpec>& specs = exe().outputs;
  if (results.size() != specs.size()) {
    throw InternalError(str_cat("the entry function returned ", results.size(), " values for ",
                                specs.size(), " outputs"));
  }
  ResultConverter convert(b.borrowed, constants_);
  py::dict out;
  for (size_t i = 0; i < results.size(); ++i) {
    out[py::str(output_names_[i])] = convert.convert(results[i], specs[i]);
  }
  return out;
}

vm::LatencyStats Executable::benchmark(py::handle feeds, int repeat, int warmup,
                                       std::optional<int> threads) {
  if (repeat < 1) user_error("repeat must be at least 1, not ", repeat);
  if (warmup < 0) user_error("warmup must not be negative, not ", warmup);
  BoundFeeds scratch;
  const BoundFeeds& b = resolve(feeds, scratch);
  vm::Executor& ex = executor(threads);
  py::gil_scoped_release no_gil;
  for (int i = 0; i < warmup; ++i) ex.run(b.values);
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(repeat));
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    ex.run(b.values);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  return vm::latency_stats(std::move(ms));
}

void Executable::save(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  serializer::save_vmexe(exe(), tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    user_error("cannot write ", path, ": ", ec.message());
  }
}

}  // namespace dynvm::python
