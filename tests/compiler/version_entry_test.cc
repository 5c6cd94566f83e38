// version_entry: the entry function versioned by a dim's values. On a tiny model whose
// shape guard (`if last dim == 1 then squeeze`) only a fixed size decides: the pass builds
// the If chain, type inference decides the guard in each version and joins them, and the
// lowered executable computes each version's values, refuses other sizes with a one-line
// run-time error, and checks a refinement even where no If guards it.
#include "compiler/passes/version_entry.h"

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/infer_types.h"
#include "compiler/pipeline.h"
#include "tests/support/expect_user_error.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

// n == 1: x squeezed to [4]; otherwise the sum of each row ([4, 1], flattened after the
// If): with n symbolic the branches' ranks differ, so they cannot be joined.
constexpr const char* kGuarded = R"(dim n: 1..5
fn @main(%x: f32[4, n], %bias: f32[4]) {
  %s = Shape(%x)
  %last = Gather(%s, const(i64[1], [-1])) {axis=0}
  %one = Equal(%last, const(i64[1], [1]))
  %r = if %one {
    return Squeeze(%x, const(i64[1], [-1]))
  } else {
    return ReduceSum(%x, const(i64[1], [-1])) {keepdims=1}
  }
  %flat = Reshape(%r, const(i64[1], [4]))
  %y = Add(%flat, %bias)
  return %y
})";

TEST(VersionEntry, BuildsAnIfChainWithRefinedParameters) {
  Module m = version_entry(parse_module(kGuarded), "n", {1, 5}).module;
  std::string text = print_module(m);
  EXPECT_NE(text.find("Equal(%n, const(i64[], [1]))"), std::string::npos) << text;
  EXPECT_NE(text.find("Equal(%n, const(i64[], [5]))"), std::string::npos) << text;
  EXPECT_NE(text.find("dynvm.Refine(%x) {dim=\"n\", value=1}"), std::string::npos) << text;
  EXPECT_NE(text.find("dynvm.Refine(%x) {dim=\"n\", value=5}"), std::string::npos) << text;
  EXPECT_EQ(text.find("dynvm.Refine(%bias)"), std::string::npos) << text;  // no n in its type
  EXPECT_NE(text.find("dim n (axis 1) must be one of 1, 5"), std::string::npos) << text;
}

TEST(VersionEntry, EachVersionDecidesItsShapeGuards) {
  // Unversioned, the guard's branches do not join: the code after it is typed once per
  // branch (infer_types' split continuation), and the result joins again.
  EXPECT_EQ(to_string(infer_types(parse_module(kGuarded)).module.functions[0]->result_type),
            "f32[4]");
  TypedModule typed =
      infer_types_with_facts(version_entry(parse_module(kGuarded), "n", {1, 5}).module);
  std::string text = print_module(typed.module);
  EXPECT_NE(text.find("-> f32[4] {"), std::string::npos) << text;
  EXPECT_NE(text.find("dynvm.Refine(%x) {dim=\"n\", value=1}"), std::string::npos) << text;
  EXPECT_NE(text.find(": f32[4, 1] = dynvm.Refine(%x)"), std::string::npos) << text;
  EXPECT_NE(text.find(": f32[4, 5] = dynvm.Refine(%x)"), std::string::npos) << text;
  // Decided in each version: the squeeze in one, the sum in the other, no inner If left.
  EXPECT_NE(text.find("= Squeeze("), std::string::npos) << text;
  EXPECT_NE(text.find("= ReduceSum("), std::string::npos) << text;
  EXPECT_EQ(text.find("if %one"), std::string::npos) << text;
  EXPECT_TRUE(typed.warnings.empty());
}

TEST(VersionEntry, RefusesWhatItCannotVersion) {
  EXPECT_USER_ERROR(version_entry(parse_module(kGuarded), "m", {1}),
                    "--dim m: the model has no symbolic dim of that name");
  EXPECT_USER_ERROR(version_entry(parse_module(kGuarded), "n", {1, 9}),
                    "--dim n: value 9 is outside the dim's range 1..5");
  EXPECT_USER_ERROR(version_entry(parse_module(kGuarded), "n", {1, 1}),
                    "--dim n: value 1 is given twice");
  EXPECT_USER_ERROR(version_entry(parse_module("dim n: 1..4\nfn @main(%x: f32[n*2]) {\n"
                                               "  return Relu(%x)\n}"),
                                  "n", {1, 2}),
                    "no input of @main has dim n as one of its dims");
  // A value the model cannot run at is a compile-time error naming the version.
  EXPECT_USER_ERROR(infer_types(version_entry(
                        parse_module("dim n: 1..8\nfn @main(%x: f32[2, n], %w: f32[4, 3]) {\n"
                                     "  %y = MatMul(%x, %w)\n  return %y\n}"),
                        "n", {4, 3})),
                    "the version for n = 3: %y = MatMul: inner dims differ: 3 and 4");
}

vm::Tensor filled(int64_t rows, int64_t cols, float start) {
  vm::Tensor t = vm::Tensor::empty({rows, cols}, vm::DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + static_cast<float>(i);
  return t;
}

std::shared_ptr<const vm::Program> compiled(const Module& m) {
  return vm::Program::load(lower_module(infer_types_with_facts(m)));
}

TEST(VersionEntry, OneExecutableRunsEveryVersionAndRefusesOtherSizes) {
  auto program = compiled(version_entry(parse_module(kGuarded), "n", {1, 5}).module);
  vm::VirtualMachine machine(program);
  vm::Tensor bias =
      vm::Tensor::from_vector(std::vector<float>{100, 200, 300, 400}, {4}, vm::DType::kFloat32);
  for (int64_t n : {1, 5}) {
    vm::Tensor x = filled(4, n, 1);
    std::vector<vm::Value> in{x, bias};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{4})) << n;
    for (int64_t r = 0; r < 4; ++r) {
      float want = bias.data_as<float>()[r];
      for (int64_t c = 0; c < n; ++c) want += x.data_as<float>()[r * n + c];
      EXPECT_FLOAT_EQ(y.data_as<float>()[r], want) << "n " << n << " row " << r;
    }
  }
  std::vector<vm::Value> other{filled(4, 3, 1), bias};
  EXPECT_USER_ERROR(machine.run(other),
                    "input 'x': dim n (axis 1) must be one of 1, 5: this executable was compiled "
                    "for those sizes only");
}

// A refinement no If guards (version_entry never builds one): the VM still checks it.
TEST(VersionEntry, LoweredRefinementIsCheckedAtRunTime) {
  Module m = parse_module("dim n: 1..8\nfn @main(%x: f32[n]) {\n  return Relu(%x)\n}");
  auto main = std::make_shared<Function>(*m.find_function("main"));
  Expr y = make_var("y");
  main->body = make_let(y,
                        make_call("dynvm.Refine", {main->params[0]},
                                  {{"dim", std::string("n")}, {"value", int64_t{2}}}),
                        make_call("Relu", {y}));
  m.functions = {main};
  auto program = compiled(m);
  vm::VirtualMachine machine(program);
  std::vector<vm::Value> two{
      vm::Tensor::from_vector(std::vector<float>{-1, 3}, {2}, vm::DType::kFloat32)};
  EXPECT_FLOAT_EQ(machine.run(two).at(0).as_tensor().data_as<float>()[1], 3.0f);
  std::vector<vm::Value> three{
      vm::Tensor::from_vector(std::vector<float>{-1, 3, 4}, {3}, vm::DType::kFloat32)};
  EXPECT_USER_ERROR(machine.run(three), "%y = dynvm.Refine: dim 0 of f32[n] is not 2");
}

}  // namespace
}  // namespace dynvm::compiler
