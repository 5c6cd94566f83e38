// An Executable is everything a .vmexe holds, as plain data: bytecode functions,
// constants, strings, the kernel table with its dispatch conditions, the kernel libraries
// (native code as bytes), and the model's input/output signature with symbolic dims.
// It is what the serializer reads and writes and the assembler produces. Nothing in it
// is trusted: Program::load (program.h) verifies it before anything runs.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "vm/device.h"
#include "vm/dtype.h"
#include "vm/opcodes.h"
#include "vm/tensor.h"

namespace dynvm::vm {

struct Instruction {
  Opcode op;
  std::vector<int64_t> args;  // laid out as opcode_info(op).operands says
  bool operator==(const Instruction&) const = default;
};

struct Function {
  std::string name;
  uint32_t num_params = 0;     // the parameters arrive in r0 .. r(num_params-1)
  uint32_t num_registers = 0;  // >= num_params
  std::vector<Instruction> code;
  bool operator==(const Function&) const = default;
};

// One dimension of a signature: a constant, or a named symbol with an inclusive range.
struct DimSpec {
  std::string symbol;  // empty: constant `value`
  int64_t value = 0;
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
  bool is_symbolic() const { return !symbol.empty(); }
  bool operator==(const DimSpec&) const = default;
};

// What a signature entry holds: a tensor, or (ONNX sequences and optionals, passed as
// tuples: compiler/op/ops_sequence.h) a sequence of tensors, an optional tensor (a tuple of
// 0 or 1 field) or an optional sequence.
enum class ValueForm : uint8_t { kTensor, kSequence, kOptional, kOptionalSequence };
inline constexpr int kNumValueForms = 4;
const char* value_form_name(ValueForm f);  // "tensor", "sequence", "optional", ...

struct TensorSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<DimSpec> dims;  // of the tensor, or of each element of a sequence
  ValueForm form = ValueForm::kTensor;
  bool any_rank = false;  // a sequence's elements of unknown rank (`dims` empty, unchecked)
  bool operator==(const TensorSpec&) const = default;
};
// "x: f32 [batch:1..8, 80]", "xs: sequence of f32 [3]", "o: optional of f32 [?rank]"
std::string tensor_spec_str(const TensorSpec& spec);

// A condition on one dim of one kernel argument; a variant applies when all hold.
enum class DimPredicateKind : uint8_t {
  kEq = 0,     // dim == a
  kModEq = 1,  // dim % a == b   (a > 0)
  kRange = 2,  // a <= dim <= b
  kDimEq = 3,  // dim == dim b of argument a (format 1.5)
};
inline constexpr int kNumDimPredicateKinds = 4;

struct DimPredicate {
  uint32_t arg = 0;  // index into the kernel's arguments (inputs, then outputs)
  uint32_t axis = 0;
  DimPredicateKind kind = DimPredicateKind::kEq;
  int64_t a = 0;
  int64_t b = 0;
  bool operator==(const DimPredicate&) const = default;
};

struct KernelVariant {
  std::string symbol;  // exported by the kernel's library
  std::vector<DimPredicate> conditions;
  bool operator==(const KernelVariant&) const = default;
};

// A kernel: variants tried in order; the first whose conditions all hold runs.
struct Kernel {
  std::string name;
  uint32_t library = 0;
  uint32_t num_inputs = 0;
  uint32_t num_outputs = 0;
  std::vector<KernelVariant> variants;
  // How its schedule was chosen, for people (vmrun --info): "tuned: tile_m=8 tile_n=16"
  // when vmc applied a tuning record, "ranked: ..." when the cost model chose the knobs
  // without a record; empty for the template's defaults. (Format 1.4.)
  std::string schedule;
  bool tuned() const { return schedule.rfind("tuned:", 0) == 0; }
  bool ranked() const { return schedule.rfind("ranked:", 0) == 0; }
  bool operator==(const Kernel&) const = default;
};

enum class LibraryFormat : uint8_t {
  kSharedObject = 0,  // an ELF shared object for the host CPU
  kPtx = 1,           // CUDA PTX text
  kCubin = 2,         // CUDA binary
};
inline constexpr int kNumLibraryFormats = 3;

struct KernelLibrary {
  LibraryFormat format = LibraryFormat::kSharedObject;
  std::string target;  // e.g. "x86_64 avx512f", "sm_90"
  std::vector<uint8_t> bytes;
  bool operator==(const KernelLibrary&) const = default;
};

struct Executable {
  std::string target;    // what the kernels were compiled for
  std::string producer;  // free text: which tool made this, from what
  std::vector<Function> functions;
  uint32_t entry = 0;             // the function `vmrun` runs; its params are `inputs`
  std::vector<Tensor> constants;  // host tensors
  std::vector<std::string> strings;
  std::vector<Kernel> kernels;
  std::vector<KernelLibrary> libraries;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;

  // Index of the function named `name`, or -1.
  int64_t find_function(std::string_view name) const;
};

// Element-wise equality of two executables (constants compared by bytes); for tests
// and round-trip checks.
bool executables_equal(const Executable& a, const Executable& b, std::string* why = nullptr);

}  // namespace dynvm::vm
