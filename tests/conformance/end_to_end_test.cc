// The ONNX backend node tests end to end, as a user runs a model: the case's model.onnx
// imported with no options (vmc with no flags), compiled by the whole pipeline
// (compiler::compile), loaded and run by the VM on test_data_set_0's inputs, and every
// output compared with the expected one (floats within atol 1e-5 + rtol 1e-3, ONNX's own
// backend tolerance; everything else exactly). Nothing is folded or bound for the
// compiler: an input that ONNX passes as a tensor stays a run-time input.
//
// Each case passes, fails (the first stage that refused it: import, compile, run, or the
// output that differs), or is not applicable (conformance_case.h: random generators,
// training-mode Dropout, ai.onnx.preview.training, string tensors). end_to_end_failures.txt
// lists `test_name reason` for every case known to fail: an unlisted failure fails the
// test, and so does a listed case that passes (the list stays honest). The summary line
// gives the share of applicable cases that pass.
//
// Under the sanitizers (each compile is several times slower) a fixed sample runs: every
// kSanitizedStride-th case in name order.
//
// DYNVM_CONFORMANCE_WRITE_FAILURES=FILE writes the failures of this run in the list's format.
// DYNVM_CONFORMANCE_ONLY=a,b runs only the cases whose name contains one of the substrings
// (for working on an operator; the list's completeness is then not checked).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/pipeline.h"
#include "frontends/onnx/importer.h"
#include "tests/conformance/conformance_case.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::conformance {
namespace {

namespace fs = std::filesystem;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kSanitizedStride = 16;
#else
constexpr size_t kSanitizedStride = 1;
#endif

// One line: newlines folded, at most 200 characters.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (s.size() > 200) s = s.substr(0, 197) + "...";
  return s;
}

// DYNVM_CONFORMANCE_ONLY's substrings (none when unset).
std::vector<std::string> name_filter(const char* spec) {
  std::vector<std::string> parts;
  std::stringstream in(spec ? spec : "");
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

bool contains_any(const std::string& name, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) {
    if (name.find(p) != std::string::npos) return true;
  }
  return false;
}

// "" when the case passes end to end, else the stage and why.
std::string run_case(const RawCase& c) {
  compiler::Module module;
  try {
    module = frontends::onnx_import::import_onnx_bytes(c.model_bytes, c.name);
  } catch (const Error& e) {
    return "import: " + one_line(e.what());
  }
  vm::Executable exe;
  std::ostringstream log;  // warnings about unreachable branches
  try {
    compiler::CompileOptions options;
    options.log = &log;
    exe = compiler::compile(std::move(module), options);
  } catch (const InternalError& e) {
    return "compile (internal error): " + one_line(e.what());
  } catch (const Error& e) {
    return "compile: " + one_line(e.what());
  }
  std::vector<vm::Value> results;
  try {
    vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
    std::vector<vm::Value> inputs(c.inputs.begin(), c.inputs.end());
    results = machine.run(inputs);
  } catch (const Error& e) {
    return "run: " + one_line(e.what());
  }
  if (results.size() != c.outputs.size()) {
    return "run: " + std::to_string(results.size()) + " outputs, expected " +
           std::to_string(c.outputs.size());
  }
  for (size_t k = 0; k < results.size(); ++k) {
    std::string why;
    if (!values_match(results[k], c.outputs[k], kRtol, kAtol, &why)) {
      return "output " + std::to_string(k) + ": " + why;
    }
  }
  return "";
}

TEST(Conformance, EndToEnd) {
  const std::map<std::string, std::string> listed = read_case_list(DYNVM_END_TO_END_FAILURES);
  const std::vector<fs::path> dirs = case_dirs(DYNVM_DEFAULT_CONFORMANCE_DIR);
  ASSERT_FALSE(dirs.empty());

  const auto t0 = std::chrono::steady_clock::now();
  int64_t passed = 0, failed = 0, failed_as_listed = 0, cases = 0;
  std::map<std::string, int64_t> not_applicable, failed_by_stage;
  std::set<std::string> ran;
  std::ostringstream failures;  // this run's list
  const std::vector<std::string> only = name_filter(std::getenv("DYNVM_CONFORMANCE_ONLY"));
  for (size_t i = 0; i < dirs.size(); i += kSanitizedStride) {
    if (!only.empty() && !contains_any(dirs[i].filename().string(), only)) continue;
    ++cases;
    RawCase c;
    try {
      c = load_raw_case(dirs[i]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << dirs[i].filename().string() << ": " << e.what();
      continue;
    }
    if (!c.not_applicable.empty()) {
      ++not_applicable[c.not_applicable.substr(0, c.not_applicable.find(" ("))];
      continue;
    }
    ran.insert(c.name);
    const std::string why = c.unreadable.empty() ? run_case(c) : "load: " + c.unreadable;
    auto it = listed.find(c.name);
    if (why.empty()) {
      ++passed;
      if (it != listed.end()) {
        ADD_FAILURE() << c.name << " passes end to end but end_to_end_failures.txt lists it ("
                      << it->second << "): remove it";
      }
      continue;
    }
    ++failed;
    ++failed_by_stage[why.substr(0, why.find(':'))];
    failures << c.name << " " << why << "\n";
    if (it != listed.end()) {
      ++failed_as_listed;
    } else {
      ADD_FAILURE() << c.name << " fails end to end: " << why;
    }
  }
  if (kSanitizedStride == 1 && only.empty()) {
    for (const auto& [name, reason] : listed) {
      if (!ran.count(name)) {
        ADD_FAILURE() << name << " is listed but is not an applicable case here: remove it";
      }
    }
  }
  if (const char* out = std::getenv("DYNVM_CONFORMANCE_WRITE_FAILURES")) {
    std::ofstream(out) << failures.str();
  }

  int64_t na = 0;
  std::string na_detail, stage_detail;
  for (const auto& [reason, n] : not_applicable) {
    na += n;
    na_detail += (na_detail.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  }
  for (const auto& [stage, n] : failed_by_stage) {
    stage_detail += (stage_detail.empty() ? "" : ", ") + stage + " " + std::to_string(n);
  }
  const int64_t applicable = passed + failed;
  std::cout << "[conformance] end to end" << (kSanitizedStride > 1 ? " (sanitizer sample)" : "")
            << ": " << cases << " cases, " << passed << " passed, " << failed << " failed ("
            << failed_as_listed << " listed; " << stage_detail << "), " << na << " not applicable ("
            << na_detail << ")\n";
  std::cout << "[conformance] end to end: " << passed << " of " << applicable
            << " applicable cases pass ("
            << (applicable > 0 ? 100.0 * static_cast<double>(passed) / applicable : 0.0) << "%) in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
}

}  // namespace
}  // namespace dynvm::conformance
