// Builds the .vmexe files the vmrun CLI tests run, directly as vm::Executable values (no
// compiler needed: they use only what the VM does without kernels), plus damaged and
// foreign files. Run by ctest as the setup of the `vmrun_models` fixture:
//   make_vmrun_fixtures DIR
//
//   identity.vmexe  x: f32 [batch:1..8, seq:1..512, 4] -> y = x
//   pair.vmexe      x: f32 [batch:1..8, seq:1..512, 4], h: i64 [seq:1..512]
//                   -> (flat = reshape(x, [batch*seq, 4]), h_out = h, rows = batch*seq)
//                   asserting "seq must be even"; rows is computed by a second function
//   const.vmexe     no inputs -> (table: f32 [2, 3] constant, mask: bool [3] constant)
//   dtypes.vmexe    a: i64 [n:0..100], b: bool [2, 2], c: f16 [m:1..64] -> (a, b, c)
//   invalid.vmexe   well-formed file, but its bytecode reads register 7 of 1
//   kernels.vmexe   tests/vm/fixtures/kernels.vmasm with the VM tests' kernel library
//                   embedded, entry add_twice: x, y: f32 [n:1..100000] -> z = (x + y) + y
//                   through two calls of kernel `add` and one of `nothing`
//   newer_major.vmexe, unknown_feature.vmexe: valid checksums, refused by version/features
//   truncated.vmexe, flipped.vmexe, random.vmexe, empty.vmexe, text.vmexe: damaged files
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "serializer/format.h"
#include "serializer/vmexe.h"
#include "vm/asm/assembler.h"
#include "vm/executable.h"

namespace dynvm::testing {
namespace {

using vm::DimSpec;
using vm::DType;
using vm::Executable;
using vm::Function;
using vm::Instruction;
using vm::Opcode;
using vm::TensorSpec;

DimSpec sym(const char* name, int64_t min, int64_t max) { return DimSpec{name, 0, min, max}; }
DimSpec fixed(int64_t v) { return DimSpec{"", v}; }

Function function(const char* name, uint32_t num_params, uint32_t num_registers) {
  Function f;
  f.name = name;
  f.num_params = num_params;
  f.num_registers = num_registers;
  return f;
}

Executable base(const char* producer) {
  Executable exe;
  exe.target = "x86_64";
  exe.producer = producer;
  return exe;
}

Executable identity() {
  Executable exe = base("make_vmrun_fixtures: identity");
  std::vector<DimSpec> dims = {sym("batch", 1, 8), sym("seq", 1, 512), fixed(4)};
  exe.inputs = {TensorSpec{"x", DType::kFloat32, dims}};
  exe.outputs = {TensorSpec{"y", DType::kFloat32, dims}};
  Function main = function("main", 1, 1);
  main.code = {{Opcode::Ret, {0}}};
  exe.functions = {main};
  return exe;
}

Executable pair() {
  Executable exe = base("make_vmrun_fixtures: pair");
  exe.inputs = {
      TensorSpec{"x", DType::kFloat32, {sym("batch", 1, 8), sym("seq", 1, 512), fixed(4)}},
      TensorSpec{"h", DType::kInt64, {sym("seq", 1, 512)}},
  };
  exe.outputs = {
      TensorSpec{"flat", DType::kFloat32, {DimSpec{"rows"}, fixed(4)}},
      TensorSpec{"h_out", DType::kInt64, {sym("seq", 1, 512)}},
      TensorSpec{"rows", DType::kInt64, {}},
  };
  exe.strings = {"seq must be even"};
  int64_t eq = static_cast<int64_t>(vm::CmpKind::kEq);
  Function main = function("main", 2, 13);
  main.code = {
      {Opcode::Dim, {2, 0, 1}},  // r2 = seq
      {Opcode::LoadImm, {3, 2}},
      {Opcode::ModI, {4, 2, 3}},
      {Opcode::LoadImm, {5, 0}},
      {Opcode::CmpI, {6, eq, 4, 5}},
      {Opcode::Assert, {6, 0}},        // seq % 2 == 0
      {Opcode::Dim, {7, 0, 0}},        // r7 = batch
      {Opcode::Invoke, {8, 1, 7, 2}},  // r8 = rows(batch, seq)
      {Opcode::LoadImm, {9, 4}},
      {Opcode::MakeShape, {10, 8, 9}},
      {Opcode::ReshapeView, {11, 0, 10}},
      {Opcode::AllocTuple, {12, 11, 1, 8}},
      {Opcode::Ret, {12}},
  };
  Function rows = function("rows", 2, 3);
  rows.code = {{Opcode::MulI, {2, 0, 1}}, {Opcode::Ret, {2}}};
  exe.functions = {main, rows};
  return exe;
}

Executable constants() {
  Executable exe = base("make_vmrun_fixtures: const");
  exe.constants = {
      vm::Tensor::from_vector(std::vector<float>{1.5f, -2.0f, 0.0f, 3.25f, 100.0f, -0.125f}, {2, 3},
                              DType::kFloat32),
      vm::Tensor::from_vector(std::vector<uint8_t>{1, 0, 1}, {3}, DType::kBool),
  };
  exe.outputs = {TensorSpec{"table", DType::kFloat32, {fixed(2), fixed(3)}},
                 TensorSpec{"mask", DType::kBool, {fixed(3)}}};
  Function main = function("main", 0, 3);
  main.code = {
      {Opcode::LoadConst, {0, 0}},
      {Opcode::LoadConst, {1, 1}},
      {Opcode::AllocTuple, {2, 0, 1}},
      {Opcode::Ret, {2}},
  };
  exe.functions = {main};
  return exe;
}

Executable dtypes() {
  Executable exe = base("make_vmrun_fixtures: dtypes");
  exe.inputs = {TensorSpec{"a", DType::kInt64, {sym("n", 0, 100)}},
                TensorSpec{"b", DType::kBool, {fixed(2), fixed(2)}},
                TensorSpec{"c", DType::kFloat16, {sym("m", 1, 64)}}};
  exe.outputs = exe.inputs;
  Function main = function("main", 3, 4);
  main.code = {{Opcode::AllocTuple, {3, 0, 1, 2}}, {Opcode::Ret, {3}}};
  exe.functions = {main};
  return exe;
}

Executable invalid() {
  Executable exe = identity();
  exe.functions[0].code = {{Opcode::Ret, {7}}};
  return exe;
}

// The VM tests' kernels.vmasm (DYNVM_VM_FIXTURES_DIR), assembled as vm_test_util.h does it:
// the test kernel library's path in place of @TEST_KERNELS@.
Executable kernels() {
  std::string path = std::string(DYNVM_VM_FIXTURES_DIR) + "/kernels.vmasm";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string text(std::istreambuf_iterator<char>(in), {});
  const std::string placeholder = "@TEST_KERNELS@";
  for (size_t at = text.find(placeholder); at != std::string::npos;
       at = text.find(placeholder, at)) {
    text.replace(at, placeholder.size(), DYNVM_TEST_KERNELS_PATH);
  }
  Executable exe = vm::assemble(text, path, DYNVM_VM_FIXTURES_DIR);
  int64_t entry = exe.find_function("add_twice");
  if (entry < 0) throw std::runtime_error(path + " has no function add_twice");
  exe.entry = static_cast<uint32_t>(entry);
  return exe;
}

void write_bytes(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// `bytes` with one header field changed and the checksum recomputed, so only the field's
// meaning can make the reader refuse it.
std::vector<uint8_t> patched(std::vector<uint8_t> bytes, size_t offset, uint64_t value,
                             size_t width) {
  serializer::store_le(bytes.data() + offset, value, width);
  serializer::store_le(bytes.data() + serializer::kChecksumOffset, serializer::file_checksum(bytes),
                       8);
  return bytes;
}

void make_all(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  serializer::save_vmexe(identity(), (dir / "identity.vmexe").string());
  serializer::save_vmexe(pair(), (dir / "pair.vmexe").string());
  serializer::save_vmexe(constants(), (dir / "const.vmexe").string());
  serializer::save_vmexe(dtypes(), (dir / "dtypes.vmexe").string());
  serializer::save_vmexe(invalid(), (dir / "invalid.vmexe").string());
  serializer::save_vmexe(kernels(), (dir / "kernels.vmexe").string());

  std::vector<uint8_t> good = serializer::write_vmexe(pair());
  write_bytes(dir / "newer_major.vmexe",
              patched(good, serializer::kMajorOffset, serializer::kFormatMajor + 1, 2));
  write_bytes(dir / "unknown_feature.vmexe",
              patched(good, serializer::kFeaturesOffset, uint64_t{1} << 40, 8));
  write_bytes(dir / "truncated.vmexe", std::span(good).first(good.size() / 2));
  std::vector<uint8_t> flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  write_bytes(dir / "flipped.vmexe", flipped);
  std::mt19937 rng(1234);
  std::vector<uint8_t> random(4096);
  for (uint8_t& b : random) b = static_cast<uint8_t>(rng());
  write_bytes(dir / "random.vmexe", random);
  write_bytes(dir / "empty.vmexe", {});
  std::string text = "this is a text file, not a model\n";
  write_bytes(dir / "text.vmexe",
              std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace
}  // namespace dynvm::testing

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_vmrun_fixtures DIR\n");
    return 2;
  }
  try {
    dynvm::testing::make_all(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_vmrun_fixtures: %s\n", e.what());
    return 1;
  }
  return 0;
}
