// dynvm.Executable: a loaded, verified program and the executors that run it. One
// executable may be run from many Python threads at once: the GIL is released while the
// VM runs, and each run borrows its own VM state from the executor (vm/executor.h).
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

#include "python/src/feeds.h"
#include "vm/executor.h"
#include "vm/profile.h"
#include "vm/program.h"

namespace dynvm::python {

namespace py = pybind11;

class Executable;

// Inputs converted once (Executable.bind) and run any number of times: what run() and
// benchmark() do to every `feeds` they are given, kept.
struct PreparedFeeds {
  const Executable* owner;
  BoundFeeds bound;
};

class Executable {
 public:
  // Verifies and loads `exe` (Program::load). Throws UserError.
  explicit Executable(vm::Executable exe);

  const vm::Executable& exe() const { return program_->exe(); }

  // Converts `feeds` (feeds.h) for runs of this executable.
  std::unique_ptr<PreparedFeeds> bind(py::handle feeds) const;
  // Runs the entry function on `feeds` (as bind() takes them, or a PreparedFeeds of this
  // executable); returns {output name: value} in signature order. `threads`: the TBB
  // executor's thread count (nullopt: every hardware thread).
  py::dict run(py::handle feeds, std::optional<int> threads);
  // Binds `feeds` once, runs `warmup` times, then times `repeat` runs.
  vm::LatencyStats benchmark(py::handle feeds, int repeat, int warmup, std::optional<int> threads);
  // Writes the .vmexe (to a temporary name, then renamed).
  void save(const std::string& path) const;

  // The output names: the signature's, or "output<i>" where it has none.
  const std::vector<std::string>& output_names() const { return output_names_; }

 private:
  vm::Executor& executor(std::optional<int> threads);
  // `feeds` itself when it is a PreparedFeeds of this executable, else `scratch` bound.
  const BoundFeeds& resolve(py::handle feeds, BoundFeeds& scratch) const;

  std::shared_ptr<const vm::Program> program_;
  std::unordered_set<const vm::StorageImpl*> constants_;
  std::vector<std::string> output_names_;
  std::mutex mu_;  // guards executors_
  std::map<int, std::unique_ptr<vm::Executor>> executors_;
};

}  // namespace dynvm::python
