// Helpers shared by the VM program tests: reading .vmasm fixtures (with the test kernel
// library's path substituted), making tensor and integer values, and checking that a
// statement throws a UserError with a given message.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/expect_user_error.h"
#include "vm/asm/assembler.h"
#include "vm/error.h"
#include "vm/interpreter.h"
#include "vm/program.h"
#include "vm/value.h"

namespace dynvm::vm::testing {

inline std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every .vmasm file in tests/vm/fixtures, by file name.
inline std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(DYNVM_VM_FIXTURES_DIR)) {
    if (entry.path().extension() == ".vmasm") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A fixture's text, with @TEST_KERNELS@ replaced by the test kernel library's path.
inline std::string fixture_text(const std::string& name) {
  std::string text = read_file_text(std::string(DYNVM_VM_FIXTURES_DIR) + "/" + name);
  const std::string placeholder = "@TEST_KERNELS@";
  for (size_t at = text.find(placeholder); at != std::string::npos;
       at = text.find(placeholder, at)) {
    text.replace(at, placeholder.size(), DYNVM_TEST_KERNELS_PATH);
  }
  return text;
}

inline Executable assemble_fixture(const std::string& name) {
  return assemble(fixture_text(name), name, DYNVM_VM_FIXTURES_DIR);
}

inline std::shared_ptr<const Program> load_fixture(const std::string& name) {
  return Program::load(assemble_fixture(name));
}

inline size_t function_index(const Program& p, std::string_view name) {
  int64_t i = p.exe().find_function(name);
  if (i < 0) throw std::runtime_error("no function " + std::string(name));
  return static_cast<size_t>(i);
}

// Runs function `name` of `p` on a fresh VM.
inline Value call(const std::shared_ptr<const Program>& p, std::string_view name,
                  std::vector<Value> args = {}) {
  VirtualMachine vm(p);
  return vm.invoke(function_index(*p, name), args);
}

inline Tensor f32_tensor(const std::vector<float>& values) {
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())}, DType::kFloat32);
}

inline std::vector<float> f32_values(const Tensor& t) {
  const float* p = t.data_as<float>();
  return std::vector<float>(p, p + t.numel());
}

}  // namespace dynvm::vm::testing
