// The serializer tests' fixtures (see rich_executable.h).
#include "tests/serializer/rich_executable.h"

#include <cstring>
#include <limits>
#include <string>

#include "vm/tensor.h"

namespace dynvm::serializer::testing {
namespace {

using vm::DimPredicateKind;
using vm::DType;
using vm::Opcode;

constexpr int64_t kCpuDevice = int64_t{1} << 32;          // DeviceType::kCPU, id 0
constexpr int64_t kCudaDevice1 = (int64_t{2} << 32) | 1;  // DeviceType::kCUDA, id 1
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kLe = static_cast<int64_t>(vm::CmpKind::kLe);
constexpr int64_t kGt = static_cast<int64_t>(vm::CmpKind::kGt);
constexpr int64_t kF32 = static_cast<int64_t>(DType::kFloat32);

vm::Instruction ins(Opcode op, std::vector<int64_t> args) { return {op, std::move(args)}; }

// A tensor whose bytes follow a pattern seeded by `seed`, so that two constants of the
// same shape still differ and a misplaced byte is noticed.
vm::Tensor patterned(vm::Shape shape, DType dtype, int seed) {
  vm::Tensor t = vm::Tensor::empty(std::move(shape), dtype);
  auto* bytes = static_cast<uint8_t*>(t.data());
  for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(seed * 31 + i * 7 + 1);
  if (dtype == DType::kBool) {
    for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] &= 1;
  }
  return t;
}

vm::Function main_function() {
  vm::Function fn{"main", 2, 16, {}};
  fn.code = {
      ins(Opcode::LoadConst, {2, 0}),                   // 0
      ins(Opcode::LoadImm, {3, 5}),                     // 1
      ins(Opcode::ShapeOf, {4, 0}),                     // 2
      ins(Opcode::Dim, {5, 0, 0}),                      // 3
      ins(Opcode::CmpI, {6, kLe, 5, 3}),                // 4
      ins(Opcode::If, {6, 6, 8}),                       // 5
      ins(Opcode::Assert, {6, 0}),                      // 6
      ins(Opcode::Goto, {9}),                           // 7
      ins(Opcode::Fatal, {1}),                          // 8
      ins(Opcode::LoadImm, {7, 4096}),                  // 9
      ins(Opcode::AllocStorage, {8, 7, kCpuDevice}),    // 10
      ins(Opcode::LoadImm, {9, kI64Min}),               // 11
      ins(Opcode::AllocTensor, {10, 8, 9, 4, kF32}),    // 12
      ins(Opcode::InvokeKernel, {0, 1, 0, 10}),         // 13
      ins(Opcode::Invoke, {11, 1, 5, 3}),               // 14
      ins(Opcode::MakeShape, {12, 5, 3}),               // 15
      ins(Opcode::ReshapeView, {13, 10, 12}),           // 16
      ins(Opcode::AllocTuple, {14, 13, 11, 1}),         // 17
      ins(Opcode::GetField, {15, 14, 0}),               // 18
      ins(Opcode::DeviceCopy, {15, 15, kCudaDevice1}),  // 19
      ins(Opcode::LoadScalar, {9, 2}),                  // 20
      ins(Opcode::Free, {2}),                           // 21
      ins(Opcode::Move, {1, 15}),                       // 22
      ins(Opcode::Ret, {1}),                            // 23
  };
  return fn;
}

vm::Function arithmetic_function() {
  vm::Function fn{"arith", 2, 6, {}};
  fn.code = {
      ins(Opcode::AddI, {2, 0, 1}), ins(Opcode::SubI, {3, 0, 1}),
      ins(Opcode::MulI, {4, 2, 3}), ins(Opcode::DivI, {5, 4, 1}),
      ins(Opcode::ModI, {5, 5, 0}), ins(Opcode::MinI, {2, 5, 2}),
      ins(Opcode::MaxI, {2, 2, 3}), ins(Opcode::LoadImm, {3, kI64Max}),
      ins(Opcode::Ret, {2}),
  };
  return fn;
}

vm::Function kernel_caller() {
  vm::Function fn{"matmul_caller", 3, 3, {}};
  fn.code = {ins(Opcode::InvokeKernel, {1, 2, 0, 1, 2}), ins(Opcode::Ret, {2})};
  return fn;
}

// Recursion: countdown(n) = n > 0 ? countdown(n - 1) : n.
vm::Function countdown() {
  vm::Function fn{"countdown", 1, 3, {}};
  fn.code = {
      ins(Opcode::LoadImm, {1, 0}), ins(Opcode::CmpI, {2, kGt, 0, 1}),
      ins(Opcode::If, {2, 3, 7}),   ins(Opcode::LoadImm, {1, 1}),
      ins(Opcode::SubI, {1, 0, 1}), ins(Opcode::Invoke, {1, 3, 1}),
      ins(Opcode::Ret, {1}),        ins(Opcode::Ret, {0}),
  };
  return fn;
}

vm::DimSpec constant_dim(int64_t v) { return vm::DimSpec{"", v, 0, kI64Max}; }
vm::DimSpec symbolic_dim(std::string symbol, int64_t min, int64_t max) {
  return vm::DimSpec{std::move(symbol), 0, min, max};
}

}  // namespace

vm::Executable rich_executable() {
  vm::Executable exe;
  exe.target = "llvm -mcpu=skylake-avx512; cuda sm_90";
  exe.producer = "vmc 0.1 from rich.onnx (serializer test)";
  exe.functions = {main_function(), arithmetic_function(), kernel_caller(), countdown()};
  exe.entry = 0;
  exe.constants = {
      vm::Tensor::from_vector<int64_t>({42}, {}, DType::kInt64),  // 0-dim scalar
      vm::Tensor::from_vector<float>({1.5f, -2.f, 0.f, 3.25f, -0.f, 1e30f}, {2, 3},
                                     DType::kFloat32),
      vm::Tensor::empty({0, 4}, DType::kUInt8),  // empty
      patterned({3}, DType::kFloat64, 1),
      patterned({5}, DType::kBool, 2),
      patterned({7}, DType::kFloat16, 3),
      patterned({2}, DType::kComplex128, 4),
      patterned({10, 10}, DType::kInt8, 5),
      patterned({1, 1, 1}, DType::kBFloat16, 6),
  };
  exe.strings = {"batch is larger than 5", "unreachable: negative batch", "",
                 std::string("nul\0inside", 10), "ünïcødé ✓"};
  exe.kernels = {
      vm::Kernel{"add_relu",
                 0,
                 1,
                 1,
                 {
                     {"add_relu_4x4",
                      {{0, 0, DimPredicateKind::kEq, 4, 0}, {1, 1, DimPredicateKind::kEq, 4, 0}}},
                     {"add_relu_mod8", {{0, 1, DimPredicateKind::kModEq, 8, 0}}},
                     {"add_relu_range", {{0, 0, DimPredicateKind::kRange, 1, 64}}},
                     {"add_relu_any", {}},
                 },
                 ""},
      vm::Kernel{
          "matmul", 1, 2, 1, {{"matmul_sm90", {{2, 0, DimPredicateKind::kRange, 1, kI64Max}}}}, ""},
  };
  std::vector<uint8_t> elf = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  for (int i = 0; i < 300; ++i) elf.push_back(static_cast<uint8_t>(i * 13));
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n";
  exe.libraries = {
      {vm::LibraryFormat::kSharedObject, "x86_64 avx512f", elf},
      {vm::LibraryFormat::kPtx, "sm_90", std::vector<uint8_t>(ptx.begin(), ptx.end())},
  };
  exe.inputs = {
      {"x", DType::kFloat32, {symbolic_dim("batch", 1, 8), constant_dim(4)}},
      {"y", DType::kInt64, {constant_dim(3)}},
  };
  exe.outputs = {
      {"out", DType::kFloat32, {symbolic_dim("batch", 0, kI64Max), constant_dim(4)}},
      {"scalar", DType::kBFloat16, {}},
  };
  return exe;
}

vm::Executable minimal_executable() {
  vm::Executable exe;
  exe.functions = {vm::Function{"main", 1, 1, {ins(Opcode::Ret, {0})}}};
  exe.inputs = {{"x", DType::kFloat32, {}}};
  return exe;
}

uint64_t get_le(std::span<const uint8_t> bytes, size_t offset, size_t nbytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < nbytes; ++i) v |= uint64_t{bytes[offset + i]} << (8 * i);
  return v;
}

void put_le(std::vector<uint8_t>& bytes, size_t offset, uint64_t value, size_t nbytes) {
  for (size_t i = 0; i < nbytes; ++i) bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace dynvm::serializer::testing
