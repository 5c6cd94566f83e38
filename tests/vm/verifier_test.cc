// The verifier rejects every kind of malformed executable with a message that says what
// is wrong and where. The executables are built directly in C++: the assembler would
// refuse most of them before the verifier could see them.
#include "vm/verifier.h"

#include <gtest/gtest.h>

#include "tests/vm/vm_test_util.h"

namespace dynvm::vm {
namespace {

Instruction ins(Opcode op, std::vector<int64_t> args) { return Instruction{op, std::move(args)}; }

constexpr int64_t kCpuCode = int64_t{1} << 32;

// A well-formed executable: main() calls two(r0, r1), and a kernel with a library.
// Each test breaks one thing.
Executable valid() {
  Executable e;
  e.functions.push_back(Function{"main",
                                 0,
                                 4,
                                 {ins(Opcode::LoadImm, {0, 7}), ins(Opcode::LoadImm, {1, 2}),
                                  ins(Opcode::Invoke, {2, 1, 0, 1}), ins(Opcode::Ret, {2})}});
  e.functions.push_back(
      Function{"two", 2, 3, {ins(Opcode::AddI, {2, 0, 1}), ins(Opcode::Ret, {2})}});
  e.strings.push_back("a message");
  e.constants.push_back(Tensor::from_vector<float>({1, 2}, {2}, DType::kFloat32));
  e.libraries.push_back(KernelLibrary{LibraryFormat::kSharedObject, "host", {1, 2, 3}});
  e.kernels.push_back(Kernel{"add", 0, 2, 1, {KernelVariant{"add_f32", {}}}, ""});
  return e;
}

// main's code replaced by `code`.
Executable with_main(std::vector<Instruction> code, uint32_t regs = 4) {
  Executable e = valid();
  e.functions[0].code = std::move(code);
  e.functions[0].num_registers = regs;
  return e;
}

void expect_rejected(const Executable& e, const std::string& message) {
  EXPECT_USER_ERROR(verify(e), message);
  EXPECT_USER_ERROR(verify(e), "invalid executable");
}

TEST(Verifier, AcceptsAWellFormedExecutable) {
  EXPECT_NO_THROW(verify(valid()));
  EXPECT_NO_THROW(verify(testing::assemble_fixture("programs.vmasm")));
  EXPECT_NO_THROW(verify(testing::assemble_fixture("every_feature.vmasm")));
}

TEST(Verifier, RegisterOutOfRange) {
  expect_rejected(with_main({ins(Opcode::LoadImm, {4, 1}), ins(Opcode::Ret, {0})}),
                  "function 0 (main) pc 0 (load_imm): operand 0: register 4 out of range (4)");
  expect_rejected(with_main({ins(Opcode::Move, {0, 9}), ins(Opcode::Ret, {0})}),
                  "pc 0 (move): operand 1: register 9 out of range (4)");
  expect_rejected(with_main({ins(Opcode::Move, {0, -1}), ins(Opcode::Ret, {0})}),
                  "operand 1: register -1 out of range");
  expect_rejected(with_main({ins(Opcode::LoadImm, {0, 1}), ins(Opcode::MakeShape, {1, 0, 0, 12}),
                             ins(Opcode::Ret, {1})}),
                  "pc 1 (make_shape): operand 3: register 12 out of range (4)");
  expect_rejected(with_main({ins(Opcode::Ret, {4})}), "pc 0 (ret): operand 0: register 4");
  // A function with no registers at all.
  expect_rejected(with_main({ins(Opcode::Ret, {0})}, 0), "register 0 out of range (0)");
}

TEST(Verifier, JumpTargetOutOfRange) {
  expect_rejected(with_main({ins(Opcode::LoadImm, {0, 1}), ins(Opcode::Goto, {2})}),
                  "pc 1 (goto): operand 0: jump target 2 out of range (2)");
  expect_rejected(with_main({ins(Opcode::LoadImm, {0, 1}), ins(Opcode::If, {0, 0, -1})}),
                  "pc 1 (if): operand 2: jump target -1 out of range");
}

TEST(Verifier, TableIndexOutOfRange) {
  expect_rejected(with_main({ins(Opcode::LoadConst, {0, 1}), ins(Opcode::Ret, {0})}),
                  "operand 1: constant 1 out of range (1)");
  expect_rejected(
      with_main({ins(Opcode::LoadImm, {0, 1}), ins(Opcode::Assert, {0, 1}), ins(Opcode::Ret, {0})}),
      "pc 1 (assert): operand 1: string 1 out of range (1)");
  expect_rejected(with_main({ins(Opcode::Fatal, {-3})}), "operand 0: string -3 out of range");
  expect_rejected(with_main({ins(Opcode::Invoke, {0, 2}), ins(Opcode::Ret, {0})}),
                  "operand 1: function 2 out of range (2)");
  expect_rejected(with_main({ins(Opcode::InvokeKernel, {1, 0}), ins(Opcode::Ret, {0})}),
                  "operand 0: kernel 1 out of range (1)");
}

TEST(Verifier, InvokeArityMismatch) {
  expect_rejected(with_main({ins(Opcode::Invoke, {0, 1, 0}), ins(Opcode::Ret, {0})}),
                  "calls two with 1 arguments, it takes 2");
  expect_rejected(with_main({ins(Opcode::Invoke, {0, 1, 0, 1, 2}), ins(Opcode::Ret, {0})}),
                  "calls two with 3 arguments, it takes 2");
}

TEST(Verifier, InvokeKernelArityMismatch) {
  // Right total, wrong split.
  expect_rejected(
      with_main({ins(Opcode::InvokeKernel, {0, 1, 0, 1, 2}), ins(Opcode::Ret, {0})}),
      "calls kernel add with 1 inputs and 3 arguments in all, it takes 2 inputs and 1 outputs");
  // Right split declared, too few registers.
  expect_rejected(
      with_main({ins(Opcode::InvokeKernel, {0, 2, 0, 1}), ins(Opcode::Ret, {0})}),
      "calls kernel add with 2 inputs and 2 arguments in all, it takes 2 inputs and 1 outputs");
}

TEST(Verifier, BadImmediates) {
  expect_rejected(with_main({ins(Opcode::AllocTensor, {0, 0, 0, 0, 99}), ins(Opcode::Ret, {0})}),
                  "pc 0 (alloc_tensor): operand 4: unknown dtype code 99");
  expect_rejected(with_main({ins(Opcode::AllocTensor, {0, 0, 0, 0, -1}), ins(Opcode::Ret, {0})}),
                  "unknown dtype code -1");
  expect_rejected(
      with_main({ins(Opcode::AllocStorage, {0, 0, int64_t{7} << 32}), ins(Opcode::Ret, {0})}),
      "pc 0 (alloc_storage): operand 2: unknown device");
  expect_rejected(
      with_main({ins(Opcode::DeviceCopy, {0, 0, kCpuCode | 0x80000000}), ins(Opcode::Ret, {0})}),
      "operand 2: unknown device");
  expect_rejected(with_main({ins(Opcode::CmpI, {0, 6, 0, 0}), ins(Opcode::Ret, {0})}),
                  "pc 0 (cmp): operand 1: unknown comparison 6");
  expect_rejected(with_main({ins(Opcode::Dim, {0, 0, -1}), ins(Opcode::Ret, {0})}),
                  "negative index -1");
  expect_rejected(with_main({ins(Opcode::GetField, {0, 0, -2}), ins(Opcode::Ret, {0})}),
                  "negative index -2");
}

TEST(Verifier, MalformedInstructions) {
  expect_rejected(with_main({ins(Opcode::AddI, {0, 1}), ins(Opcode::Ret, {0})}),
                  "pc 0 (add): has 2 operands, expected 3");
  expect_rejected(with_main({ins(Opcode::Invoke, {0}), ins(Opcode::Ret, {0})}),
                  "has 1 operands, expected at least 2");
  expect_rejected(with_main({ins(static_cast<Opcode>(200), {}), ins(Opcode::Ret, {0})}),
                  "pc 0: unknown opcode 200");
}

TEST(Verifier, FunctionThatCanFallOffItsEnd) {
  expect_rejected(with_main({ins(Opcode::LoadImm, {0, 1})}),
                  "function 0 (main): can fall off its end (the last instruction is load_imm");
  // A jump over the end is a terminator; an instruction after it is what matters.
  expect_rejected(with_main({ins(Opcode::Goto, {1}), ins(Opcode::Move, {0, 0})}),
                  "can fall off its end");
}

TEST(Verifier, FunctionShape) {
  Executable e = valid();
  e.functions[0].num_params = 5;
  expect_rejected(e, "function 0 (main): 5 parameters but only 4 registers");
  e = valid();
  e.functions[1].code.clear();
  expect_rejected(e, "function 1 (two): has no code");
  e = valid();
  e.functions[1].num_registers = kMaxRegisters + 1;
  expect_rejected(e, "too many registers");
  e = valid();
  e.functions.clear();
  expect_rejected(e, "it has no functions");
}

TEST(Verifier, EntryFunction) {
  Executable e = valid();
  e.entry = 2;
  expect_rejected(e, "entry function 2 out of range (2)");
  e = valid();
  e.inputs.push_back(TensorSpec{"x", DType::kFloat32, {DimSpec{"", 3}}});
  expect_rejected(e, "entry function main takes 0 parameters but the signature declares 1 inputs");
  e.entry = 1;  // two(a, b) takes 2
  expect_rejected(e, "entry function two takes 2 parameters but the signature declares 1 inputs");
}

TEST(Verifier, Signature) {
  Executable e = valid();
  e.outputs.push_back(TensorSpec{"y", DType::kFloat32, {DimSpec{"", -1}}});
  expect_rejected(e, "signature y: negative dim");
  e = valid();
  e.outputs.push_back(TensorSpec{"y", DType::kFloat32, {DimSpec{"seq", 0, 10, 5}}});
  expect_rejected(e, "signature y: empty range 10..5 for seq");
  e = valid();
  e.outputs.push_back(TensorSpec{"y", static_cast<DType>(77), {}});
  expect_rejected(e, "signature y: bad dtype");
}

TEST(Verifier, KernelTable) {
  Executable e = valid();
  e.kernels[0].library = 1;
  expect_rejected(e, "kernel 0 (add): library 1 out of range (1)");
  e = valid();
  e.kernels[0].variants[0].conditions.push_back(DimPredicate{3, 0, DimPredicateKind::kEq, 4, 0});
  expect_rejected(e, "kernel 0 (add): condition on argument 3 of 3");
  e = valid();
  e.kernels[0].variants[0].conditions.push_back(DimPredicate{0, 0, DimPredicateKind::kModEq, 0, 0});
  expect_rejected(e, "modulo condition with divisor 0");
  e = valid();
  e.kernels[0].variants[0].conditions.push_back(DimPredicate{0, 0, DimPredicateKind::kDimEq, 3, 0});
  expect_rejected(e, "condition compares with argument 3 dim 0 of 3 arguments");
  e = valid();
  e.kernels[0].variants[0].conditions.push_back(
      DimPredicate{0, 0, DimPredicateKind::kDimEq, 1, -1});
  expect_rejected(e, "condition compares with argument 1 dim -1");
  e = valid();
  e.kernels[0].variants[0].conditions.push_back(
      DimPredicate{0, 0, static_cast<DimPredicateKind>(9), 0, 0});
  expect_rejected(e, "bad condition kind");
  e = valid();
  e.kernels[0].variants.clear();
  expect_rejected(e, "kernel 0 (add): has no variants");
  e = valid();
  e.kernels[0].variants[0].symbol.clear();
  expect_rejected(e, "a variant has no symbol");
}

TEST(Verifier, ConstantsMustBeHostTensors) {
  Executable e = valid();
  e.constants.push_back(Tensor());
  expect_rejected(e, "a constant is not a host tensor");
}

TEST(Verifier, ProgramLoadVerifiesFirst) {
  // Rejected before any library is loaded (its bytes here are not a library).
  EXPECT_USER_ERROR(Program::load(with_main({ins(Opcode::Goto, {5})})), "jump target 5");
}

}  // namespace
}  // namespace dynvm::vm
