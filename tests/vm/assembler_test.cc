// The .vmasm assembler and the disassembler: every fixture round-trips (disassemble ->
// assemble gives an equal executable, and the text is stable), constants of every dtype
// keep their exact bytes, abbreviated output is refused clearly, and errors in the text
// name the file and line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/vm/vm_test_util.h"
#include "vm/asm/disassembler.h"
#include "vm/verifier.h"

#if DYNVM_HAVE_RICH_EXECUTABLE
#include "tests/serializer/rich_executable.h"
#endif

namespace dynvm::vm {
namespace {

DisasmOptions full() {
  DisasmOptions o;
  o.max_constant_elements = DisasmOptions::kUnlimited;
  o.show_library_bytes = true;
  return o;
}

// exe -> text -> exe2 == exe, and exe2 -> the same text.
void expect_round_trip(const Executable& exe, const std::string& what) {
  std::string text = disassemble(exe, full());
  Executable again;
  try {
    again = assemble(text, what + " (disassembled)");
  } catch (const UserError& e) {
    FAIL() << what << ": the disassembly does not assemble: " << e.what() << "\n" << text;
  }
  std::string why;
  EXPECT_TRUE(executables_equal(exe, again, &why)) << what << ": differs in " << why << "\n"
                                                   << text;
  EXPECT_EQ(disassemble(again, full()), text) << what;
}

TEST(Assembler, EveryFixtureRoundTrips) {
  std::vector<std::string> names = testing::fixture_names();
  ASSERT_GE(names.size(), 4u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    Executable exe = testing::assemble_fixture(name);
    EXPECT_NO_THROW(verify(exe));
    expect_round_trip(exe, name);
  }
}

#if DYNVM_HAVE_RICH_EXECUTABLE
TEST(Assembler, SerializerRichExecutableRoundTrips) {
  expect_round_trip(serializer::testing::rich_executable(), "rich_executable");
  expect_round_trip(serializer::testing::minimal_executable(), "minimal_executable");
}
#endif

TEST(Assembler, FixtureReadsAsWritten) {
  Executable exe = testing::assemble_fixture("every_feature.vmasm");
  EXPECT_EQ(exe.target, "x86_64 avx512f");
  EXPECT_EQ(exe.producer, "every_feature.vmasm \"quoted\" producer");
  ASSERT_EQ(exe.functions.size(), 5u);
  EXPECT_EQ(exe.entry, 0u);
  EXPECT_EQ(exe.functions[0].name, "main entry");
  EXPECT_EQ(exe.functions[0].num_registers, 24u);
  EXPECT_EQ(exe.functions[1].num_registers, 4u);  // regs= omitted: highest register + 1
  EXPECT_EQ(exe.functions[4].num_registers, 0u);

  ASSERT_EQ(exe.inputs.size(), 2u);
  EXPECT_EQ(tensor_spec_str(exe.inputs[0]), "tokens: i64 [batch:1..8, seq:1.., 4]");
  EXPECT_EQ(exe.inputs[1].name, "audio:0");
  EXPECT_EQ(exe.inputs[1].dims[1].symbol, "frames per second");
  EXPECT_EQ(exe.inputs[1].dims[1].min, 16);
  EXPECT_EQ(exe.inputs[1].dims[1].max, 16000);
  EXPECT_EQ(tensor_spec_str(exe.outputs[0]), "logits: f32 [batch, seq:0..512]");
  EXPECT_TRUE(exe.outputs[1].dims.empty());

  ASSERT_EQ(exe.libraries.size(), 2u);
  EXPECT_EQ(exe.libraries[0].format, LibraryFormat::kPtx);
  EXPECT_EQ(exe.libraries[0].target, "sm_90");
  EXPECT_EQ(std::string(exe.libraries[0].bytes.begin(), exe.libraries[0].bytes.end()),
            "// PTX text\n");
  std::string so = testing::read_file_text(DYNVM_TEST_KERNELS_PATH);
  EXPECT_EQ(exe.libraries[1].bytes, std::vector<uint8_t>(so.begin(), so.end()));

  ASSERT_EQ(exe.kernels.size(), 2u);
  const Kernel& mm = exe.kernels[0];
  EXPECT_EQ(mm.library, 1u);
  ASSERT_EQ(mm.variants.size(), 3u);
  EXPECT_EQ(mm.variants[0].conditions,
            (std::vector<DimPredicate>{{0, 0, DimPredicateKind::kEq, 4, 0},
                                       {1, 1, DimPredicateKind::kEq, 4, 0}}));
  EXPECT_EQ(mm.variants[1].conditions,
            (std::vector<DimPredicate>{{0, 1, DimPredicateKind::kModEq, 8, 0},
                                       {2, 0, DimPredicateKind::kRange, 1, 64},
                                       {1, 0, DimPredicateKind::kDimEq, 0, 1}}));
  EXPECT_TRUE(mm.variants[2].conditions.empty());
  EXPECT_EQ(exe.kernels[1].name, "relu (fused)");
  EXPECT_EQ(exe.kernels[1].variants[0].symbol, "relu_v$1");

  // Declared strings first, then inline ones in order of use.
  ASSERT_EQ(exe.strings.size(), 4u);
  EXPECT_EQ(exe.strings[0], "hello, \"world\"\n\ttab \\ backslash \x01 bell\x7f");
  EXPECT_EQ(exe.strings[1], "");
  EXPECT_EQ(exe.strings[3], "an inline message");

  // Instruction operands by kind.
  const std::vector<Instruction>& code = exe.functions[0].code;
  EXPECT_EQ(code[1], (Instruction{Opcode::LoadConst, {3, 1}}));
  EXPECT_EQ(code[2], (Instruction{Opcode::LoadImm, {4, 16}}));
  EXPECT_EQ(code[13].args[1], static_cast<int64_t>(CmpKind::kGe));
  EXPECT_EQ(code[17].args[2], (int64_t{2} << 32) | 1);  // cuda:1
  EXPECT_EQ(code[18].args[4], static_cast<int64_t>(DType::kBFloat16));
  EXPECT_EQ(code[24], (Instruction{Opcode::InvokeKernel, {1, 1, 16, 16}}));
  EXPECT_EQ(code[29], (Instruction{Opcode::If, {11, 30, 34}}));
  EXPECT_EQ(code[31], (Instruction{Opcode::Assert, {11, 3}}));
  EXPECT_EQ(exe.functions[1].code[0], (Instruction{Opcode::Invoke, {1, 2, 0}}));
}

template <typename T>
T element(const Tensor& t, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(t.data()) + i * sizeof(T), sizeof(T));
  return v;
}

TEST(Assembler, ConstantsOfEveryDtypeKeepTheirBytes) {
  Executable exe = testing::assemble_fixture("every_feature.vmasm");
  const auto& c = exe.constants;
  ASSERT_EQ(c.size(), 18u);
  EXPECT_EQ(c[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(element<float>(c[0], 3), 3.25f);
  EXPECT_TRUE(std::signbit(element<float>(c[0], 4)));  // -0
  EXPECT_EQ(element<int64_t>(c[1], 0), std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(c[1].shape().empty());
  EXPECT_EQ(c[2].numel(), 0);
  // float16: 0.1 -> 0x2e66, -65504 -> 0xfbff, 6e-8 -> smallest subnormal, inf, -inf, nan
  EXPECT_EQ(element<uint16_t>(c[3], 0), 0x2e66);
  EXPECT_EQ(element<uint16_t>(c[3], 1), 0xfbff);
  EXPECT_EQ(element<uint16_t>(c[3], 2), 0x0001);
  EXPECT_EQ(element<uint16_t>(c[3], 3), 0x7c00);
  EXPECT_EQ(element<uint16_t>(c[3], 4), 0xfc00);
  EXPECT_EQ(element<uint16_t>(c[3], 5), 0x7e00);
  // bfloat16: 0.1 -> 0x3dcd, -nan -> 0xffc0, raw bits kept
  EXPECT_EQ(element<uint16_t>(c[4], 0), 0x3dcd);
  EXPECT_EQ(element<uint16_t>(c[4], 3), 0xffc0);
  EXPECT_EQ(element<uint16_t>(c[4], 4), 0x7f81);
  // float32 signalling NaN payloads survive as raw bits.
  EXPECT_EQ(element<uint32_t>(c[5], 5), 0x7fa00001u);
  EXPECT_EQ(element<uint32_t>(c[5], 6), 0xff800001u);
  EXPECT_EQ(element<uint32_t>(c[5], 1), 1u);  // smallest subnormal
  EXPECT_EQ(element<double>(c[6], 2), 5e-324);
  EXPECT_EQ(element<uint64_t>(c[6], 3), 0x7ff0000000000001ull);
  EXPECT_EQ(element<int8_t>(c[7], 0), -128);
  EXPECT_EQ(element<uint64_t>(c[13], 1), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(element<uint8_t>(c[14], 0), 1);
  EXPECT_EQ(element<uint8_t>(c[14], 1), 0);
  EXPECT_EQ(c[15].dtype(), DType::kComplex64);
  EXPECT_EQ(element<float>(c[15], 2), 0.5f);
  EXPECT_EQ(element<double>(c[16], 0), 1e300);
  EXPECT_EQ(c[17].numel(), 40);
  EXPECT_EQ(element<float>(c[17], 39), 39.0f);
}

TEST(Assembler, RandomFloatBitsRoundTrip) {
  // Every bit pattern -- normal, subnormal, NaN payloads -- comes back exactly.
  Executable exe = assemble(".func main\n ret r0\n.end\n");
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64,
                  DType::kComplex64, DType::kComplex128}) {
    Tensor c = Tensor::empty({500}, t);
    auto* bytes = static_cast<uint8_t*>(c.data());
    for (size_t i = 0; i < c.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(next());
    exe.constants.push_back(c);
  }
  Tensor halves = Tensor::empty({65536}, DType::kFloat16);  // every float16, once
  for (uint32_t i = 0; i < 65536; ++i) halves.data_as<uint16_t>()[i] = static_cast<uint16_t>(i);
  exe.constants.push_back(halves);
  expect_round_trip(exe, "random floats");
}

TEST(Assembler, DuplicateAndOddNamesRoundTrip) {
  Executable exe = assemble(R"(
.entry #1
.kernel k inputs=1 outputs=1 library=0
    variant s
.kernel k inputs=1 outputs=1 library=0
    variant "s t"
.func "" params=0
    fatal ""
.end
.func f params=0
    invoke r0, #0
    invoke r1, #3
    invoke_kernel #1, 1, r0, r1
    ret r1
.end
.func "with space" params=0
    fatal "x"
.end
.func f params=0
    invoke r0, "with space"
    invoke r0, ""
    ret r0
.end
)");
  EXPECT_EQ(exe.entry, 1u);
  EXPECT_EQ(exe.functions[1].code[1].args[1], 3);
  EXPECT_EQ(exe.functions[3].code[0].args[1], 2);
  EXPECT_EQ(exe.functions[3].code[1].args[1], 0);
  expect_round_trip(exe, "odd names");
  std::string text = disassemble(exe);
  EXPECT_NE(text.find(".entry #1"), std::string::npos) << text;
  EXPECT_NE(text.find("invoke         r0, \"with space\""), std::string::npos) << text;
}

TEST(Disassembler, IsReadable) {
  Executable exe = testing::assemble_fixture("programs.vmasm");
  std::string text = disassemble(exe);
  // A header with the signature and sizes.
  EXPECT_NE(text.find("; dynvm executable"), std::string::npos) << text;
  EXPECT_NE(text.find(";   entry      main (function 0)\n"), std::string::npos) << text;
  EXPECT_NE(text.find(";   inputs     (none)\n"), std::string::npos) << text;
  std::string kernels = disassemble(testing::assemble_fixture("kernels.vmasm"));
  EXPECT_NE(kernels.find(";   inputs     x: f32 [n:1..100000]\n;              y: f32 [n]\n"
                         ";   outputs    z: f32 [n]\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(text.find(std::to_string(exe.functions.size()) + " functions"), std::string::npos);
  // Labels named by pc, columns aligned, the pc in a trailing comment, messages shown.
  EXPECT_NE(text.find(".func fact params=1 regs=5"), std::string::npos) << text;
  EXPECT_NE(text.find("          if             r2, L3, L4"), std::string::npos) << text;
  EXPECT_NE(text.find("L3:       ret            r1"), std::string::npos) << text;
  EXPECT_NE(text.find("assert         r2, s0"), std::string::npos) << text;
  EXPECT_NE(text.find("; 2  \"n must be positive\""), std::string::npos) << text;
  EXPECT_NE(text.find("cmp            r2, le, r0, r1"), std::string::npos) << text;
  EXPECT_NE(text.find("alloc_storage  r1, r0, cpu"), std::string::npos) << text;
  EXPECT_NE(text.find("alloc_tensor   r7, r1, r2, r6, f32"), std::string::npos) << text;
}

TEST(Disassembler, AbbreviatesLargeConstantsAndTheAssemblerRefusesThem) {
  Executable exe = assemble(".func main\n ret r0\n.end\n");
  std::vector<float> values(100);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) / 4;
  exe.constants.push_back(Tensor::from_vector(values, {10, 10}, DType::kFloat32));
  exe.constants.push_back(Tensor::from_vector<int32_t>({1, 2, 3}, {3}, DType::kInt32));
  std::string text = disassemble(exe);
  EXPECT_NE(text.find(".const c0 f32 [10, 10] = ... (100 elements)  ; 0 0.25 0.5 0.75"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(".const c1 i32 [3] = 1 2 3\n"), std::string::npos) << text;
  EXPECT_USER_ERROR(assemble(text, "short.vmasm"), "constant c0 was printed abbreviated");
  EXPECT_USER_ERROR(assemble(text, "short.vmasm"), "short.vmasm:");
  DisasmOptions small;
  small.max_constant_elements = 2;
  EXPECT_NE(disassemble(exe, small).find("c1 i32 [3] = ... (3 elements)"), std::string::npos);
  // Unlimited: a long constant wraps over lines in { } and reassembles.
  std::string all = disassemble(exe, full());
  EXPECT_NE(all.find(".const c0 f32 [10, 10] = {\n"), std::string::npos) << all;
  expect_round_trip(exe, "long constant");
}

TEST(Disassembler, LibrariesShowSizeAndTargetBytesOnRequest) {
  Executable exe = testing::assemble_fixture("kernels.vmasm");
  size_t size = exe.libraries[0].bytes.size();
  std::string text = disassemble(exe);
  EXPECT_NE(text.find(".library_bytes format=so target=\"host\" size=" + std::to_string(size) +
                      " = ...\n"),
            std::string::npos)
      << text;
  EXPECT_USER_ERROR(assemble(text), "library 0's bytes were not printed");
  DisasmOptions bytes;
  bytes.show_library_bytes = true;
  std::string with_bytes = disassemble(exe, bytes);
  EXPECT_NE(with_bytes.find("= {\n    7f454c46"), std::string::npos);  // an ELF file
  Executable again = assemble(with_bytes);
  EXPECT_EQ(again.libraries, exe.libraries);
  // The reassembled program runs: the library bytes are intact.
  auto program = Program::load(std::move(again));
  VirtualMachine vm(program);
  std::vector<Value> in{testing::f32_tensor({1, 2, 3}), testing::f32_tensor({10, 20, 30})};
  EXPECT_EQ(testing::f32_values(vm.run(in)[0].as_tensor()), (std::vector<float>{11, 22, 33}));
}

TEST(Disassembler, PrintsUnverifiedExecutablesWithoutTrustingThem) {
  Executable exe;
  exe.entry = 7;
  exe.inputs.push_back(TensorSpec{"x", static_cast<DType>(99), {DimSpec{"", -3}}});
  DimPredicate bad_condition{9, 9, static_cast<DimPredicateKind>(7), 0, 0};
  exe.kernels.push_back(Kernel{"k", 5, 1, 1, {KernelVariant{"v", {bad_condition}}}, ""});
  exe.functions.push_back(Function{
      "f",
      0,
      1,
      {Instruction{Opcode::AllocTensor, {0, -1, 0, 0, 99}}, Instruction{Opcode::Goto, {12}},
       Instruction{static_cast<Opcode>(250), {1, 2}}, Instruction{Opcode::Invoke, {0, 4, 1}},
       Instruction{Opcode::CmpI, {0, 9, 0, 0}}, Instruction{Opcode::AllocStorage, {0, 0, -5}},
       Instruction{Opcode::LoadConst, {0, 3}}, Instruction{Opcode::Fatal, {}},
       Instruction{Opcode::InvokeKernel, {8, 1, 0, 0}}, Instruction{Opcode::Assert, {0, 2}}}});
  exe.constants.push_back(Tensor());
  std::string text = disassemble(exe);
  for (const char* part :
       {".entry #7", "inputs     x ?dtype(99) [-3]", "?cond(7)", "r0, ?reg(-1), r0, r0, ?dtype(99)",
        "goto           @12", "; invalid opcode 250", "invoke         r0, #4, r1", "?cmp(9)",
        "?device(-5)", "load_const     r0, #3", "invoke_kernel  #8, 1", "assert         r0, #2",
        "; constant 0 is not a tensor"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
}

// assemble(text) must fail with "t.vmasm:<line>: <message>".
void expect_error(const std::string& text, int line, const std::string& message) {
  SCOPED_TRACE(text);
  EXPECT_USER_ERROR(assemble(text, "t.vmasm"), "t.vmasm:" + std::to_string(line) + ": " + message);
}

TEST(Assembler, ErrorsNameFileAndLine) {
  const std::string head = ".func main params=1\n";  // line 1
  expect_error(head + "  load_imm r1, 3\n  ad r1, r0, r0\n  ret r1\n.end\n", 3,
               "unknown mnemonic 'ad'");
  expect_error(head + "  add rx, r0, r0\n  ret r0\n.end\n", 2, "unknown register 'rx'");
  expect_error(head + "  add r1, r0, 5\n  ret r0\n.end\n", 2, "unknown register '5'");
  expect_error(head + "  goto nowhere\n.end\n", 2, "undefined label 'nowhere' in function main");
  expect_error(head + "  add r1, r0\n  ret r0\n.end\n", 2,
               "'add' takes 3 operands (dst, reg, reg), got 2");
  expect_error(head + "  ret\n.end\n", 2, "'ret' takes 1 operand (reg), got 0");
  expect_error(head + "  invoke r1\n  ret r1\n.end\n", 2,
               "'invoke' takes at least 2 operands (dst, func, reg...), got 1");
  expect_error(head + "  add r1 r0, r0\n.end\n", 2, "expected ',', got 'r0'");
  expect_error(".func main params=1 regs=2\n  load_imm r2, 1\n  ret r0\n.end\n", 2,
               "register r2 out of range: function main has regs=2");
  expect_error(head + "  load_imm r1, 1x\n  ret r1\n.end\n", 2,
               "expected an integer (an integer), got '1x'");
  expect_error(head + "  cmp r1, less, r0, r0\n  ret r1\n.end\n", 2, "unknown comparison 'less'");
  expect_error(head + "  alloc_storage r1, r0, tpu\n  ret r1\n.end\n", 2, "unknown device 'tpu'");
  expect_error(head + "  alloc_tensor r1, r0, r0, r0, f31\n  ret r1\n.end\n", 2,
               "unknown dtype 'f31'");
  expect_error(head + "  invoke r1, nobody, r0\n  ret r1\n.end\n", 2, "unknown function 'nobody'");
  expect_error(head + "  invoke r1, #4, r0\n  ret r1\n.end\n", 2, "function #4 out of range (1)");
  expect_error(head + "  load_const r1, c0\n  ret r1\n.end\n", 2, "unknown constant 'c0'");
  expect_error(head + "  fatal msg\n.end\n", 2, "unknown string 'msg'");
  expect_error(head + "  invoke_kernel k, 0, r0\n  ret r0\n.end\n", 2, "unknown kernel 'k'");
  expect_error(head + "x:\n  ret r0\nx:  ret r0\n.end\n", 4, "label 'x' defined twice");
  expect_error(head + "  goto end\nend:\n.end\n", 2, "label 'end' marks the end of function main");
  expect_error(head + "  ret r0\n", 1, "function main has no .end");
  expect_error(head + "  ret r0\n.func g\n", 3, "directive .func inside function main");
  expect_error("\n.end\n", 2, ".end outside a function");
  expect_error("  ret r0\n", 1, "expected a directive");
  expect_error("; comment\n.bogus 1\n", 2, "unknown directive .bogus");
  expect_error(".string s \"unterminated\n", 1, "unterminated string literal");
  expect_error(".string s \"bad \\q escape\"\n", 1, "unknown escape '\\q'");
  expect_error(".string s \"a\"\n.string s \"b\"\n", 2, "string 's' declared twice");
  expect_error(".target \"a\"\n.target \"b\"\n", 2, "duplicate .target");
  expect_error(".entry main extra\n", 1, "unexpected 'extra' at the end of the line");
  expect_error(".entry nowhere\n.func main\n ret r0\n.end\n", 1, "unknown function 'nowhere'");
  expect_error(".func f\n ret r0\n.end\n.func f\n ret r0\n.end\n.entry f\n", 7,
               "function name 'f' is ambiguous (2 have it); refer to one as #N");
  expect_error(".input x f32 [batch:8..]\n.input y f32 [n:x..9]\n", 2,
               "bad range 'x..9' for dim n");
  expect_error(".input x f33 [1]\n", 1, "unknown dtype 'f33'");
  expect_error(".const c f32 [2] = 1\n", 1, "constant c (f32 [2]) needs 2 values, got 1");
  expect_error(".const c i8 [2] = 1 \\\n 300\n", 1, "constant c: '\\' is not an integer");
  expect_error(".const c i8 [2] = {\n  1\n  300 }\n", 3, "constant c: 300 is out of range for i8");
  expect_error(".const c u8 [1] = -1\n", 1, "constant c: -1 is out of range for u8");
  expect_error(".const c f16 [1] = 70000\n", 1, "constant c: '70000' is out of range for f16");
  expect_error(".const c f32 [1] = 1e39\n", 1, "constant c: '1e39' is out of range for f32");
  expect_error(".const c f32 [1] = one\n", 1, "constant c: 'one' is not a number");
  expect_error(".const c f32 [1] = bits:0x1ffffffff\n", 1,
               "constant c: 'bits:0x1ffffffff' is not a 32-bit pattern");
  expect_error(".const c f32 [1] = {\n 1\n", 3, "missing '}'");
  expect_error(".library \"does/not/exist.so\"\n", 1, "cannot read library");
  expect_error(".library_bytes size=3 = { 0102 }\n", 1, "library says size=3 but has 2 bytes");
  expect_error(".library_bytes size=1 = { 0g }\n", 1, "'0g' is not hex");
  expect_error(".library_bytes format=elf size=0 = { }\n", 1, "unknown library format 'elf'");
  expect_error("variant v\n", 1, "'variant' must follow a .kernel line");
  expect_error(".kernel k inputs=1\n", 1, ".kernel k needs outputs=N");
  expect_error(".kernel k inputs=1 outputs=1 colour=3\n", 1, "unknown attribute 'colour'");
  expect_error(".kernel k inputs=1 outputs=1\n  variant v when dim0 == 3\n", 2,
               "expected argN.dimM in a condition, got 'dim0'");
  expect_error(".kernel k inputs=1 outputs=1\n  variant v when arg0.dim0 > 3\n", 2,
               "expected '==', '%' or 'in' after arg0.dim0, got '>'");
  expect_error(".kernel k inputs=1 outputs=1\n.func f\n ret r0\n.end\n  variant v\n", 5,
               "'variant' must follow a .kernel line");
}

TEST(Assembler, FileErrorsUseThePathAndLibrariesResolveBesideTheFile) {
  EXPECT_USER_ERROR(assemble_file("/nonexistent/x.vmasm"), "cannot read '/nonexistent/x.vmasm'");
  // programs.vmasm has no .library: assemble_file reads it as is.
  Executable exe = assemble_file(std::string(DYNVM_VM_FIXTURES_DIR) + "/programs.vmasm");
  EXPECT_EQ(exe.find_function("fact") >= 0, true);
  // A relative .library path is read from base_dir.
  std::filesystem::path so(DYNVM_TEST_KERNELS_PATH);
  Executable lib = assemble(".library \"" + so.filename().string() + "\"\n", "lib.vmasm",
                            so.parent_path().string());
  ASSERT_EQ(lib.libraries.size(), 1u);
  EXPECT_EQ(lib.libraries[0].bytes.size(), std::filesystem::file_size(so));
  EXPECT_EQ(lib.libraries[0].format, LibraryFormat::kSharedObject);
}

TEST(Assembler, InlineStringsAreInternedOnce) {
  Executable exe = assemble(R"(
.string known "same"
.func main params=1
    assert r0, "same"
    assert r0, "other"
    assert r0, "other"
    assert r0, s0
    ret r0
.end
)");
  EXPECT_EQ(exe.strings, (std::vector<std::string>{"same", "other"}));
  EXPECT_EQ(exe.functions[0].code[0].args[1], 0);
  EXPECT_EQ(exe.functions[0].code[1].args[1], 1);
  EXPECT_EQ(exe.functions[0].code[2].args[1], 1);
}

}  // namespace
}  // namespace dynvm::vm
