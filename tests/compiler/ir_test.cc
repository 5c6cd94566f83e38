// The graph IR: types and dims, and the text form — an exact expected printout of a module
// using every expression kind, print → parse → print fixed points, values that must
// survive the round trip bit for bit, and one-line errors with line:column.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "kernels/arith/parser.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::compiler {
namespace {

constexpr vm::DType kF32 = vm::DType::kFloat32;

TEST(IrTypes, PrintAndCompare) {
  arith::Var seq("seq");
  Type t = tensor_type(kF32, {seq, 80, Dim::any()});
  EXPECT_EQ(to_string(t), "f32[seq, 80, ?]");
  EXPECT_EQ(to_string(tensor_type(vm::DType::kInt64, {})), "i64[]");
  EXPECT_EQ(to_string(tuple_type({t})), "(f32[seq, 80, ?],)");
  EXPECT_EQ(to_string(func_type({t}, {t, t})),
            "fn(f32[seq, 80, ?]) -> (f32[seq, 80, ?], f32[seq, 80, ?])");
  // Dims compare structurally; Any only equals Any.
  EXPECT_TRUE(type_equal(tensor_type(kF32, {arith::Expr(seq) * 2}),
                         tensor_type(kF32, {arith::Expr(seq) * 2})));
  EXPECT_FALSE(type_equal(tensor_type(kF32, {seq}), tensor_type(kF32, {Dim::any()})));
  EXPECT_FALSE(type_equal(tensor_type(kF32, {seq}), tensor_type(kF32, {arith::Var("seq")})));
  EXPECT_TRUE(Dim::any().same_as(Dim::any()));
  EXPECT_EQ(Dim(7).value(), 7);
}

TEST(IrAttrs, TextKeepsKinds) {
  EXPECT_EQ(to_string(AttrValue(int64_t{3})), "3");
  EXPECT_EQ(to_string(AttrValue(1.0)), "1.0");
  EXPECT_EQ(to_string(AttrValue(1e-5)), "1.0000000000000001e-05");
  EXPECT_EQ(to_string(AttrValue(std::string("a\"b\n"))), "\"a\\\"b\\n\"");
  EXPECT_EQ(to_string(AttrValue(std::vector<int64_t>{1, -2})), "[1, -2]");
  EXPECT_EQ(to_string(AttrValue(std::vector<std::string>{"x", "y"})), "[\"x\", \"y\"]");
  EXPECT_EQ(to_string(AttrValue(
                vm::Tensor::from_vector(std::vector<int64_t>{4}, {1}, vm::DType::kInt64))),
            "const(i64[1], [4])");
  Attrs a{{"k", int64_t{2}}};
  EXPECT_EQ(attr_int(a, "k", 0, "Op"), 2);
  EXPECT_EQ(attr_int(a, "missing", 5, "Op"), 5);
  EXPECT_USER_ERROR(attr_float(a, "k", 0, "Gemm"), "Gemm: attribute 'k' is int, expected float");
}

// A module with every kind of expression, built with the builders.
Module example_module() {
  Module m;
  arith::Var seq("seq");
  m.dims.push_back({seq, 1, 512});
  Type x_type = tensor_type(kF32, {seq, 2});
  Type scalar_bool = tensor_type(vm::DType::kBool, {});
  Type scalar_i64 = tensor_type(vm::DType::kInt64, {});

  auto twice = std::make_shared<Function>();
  twice->name = "twice";
  Expr a = make_var("a", x_type);
  twice->params = {a};
  twice->body = make_call("add", {a, a});
  twice->result_type = x_type;

  auto main = std::make_shared<Function>();
  main->name = "main";
  Expr x = make_var("x", x_type), c = make_var("c", scalar_bool), n = make_var("n", scalar_i64);
  main->params = {x, c, n};
  vm::Tensor w =
      vm::Tensor::from_vector(std::vector<float>{0.5f, -1.25f, 3.0f, 1e-7f}, {2, 2}, kF32);
  Expr mm = make_var("mm", x_type);
  Expr branch = make_var("branch");
  Expr looped = make_var("looped");
  // Loop body: (i, go, acc) -> (go, acc + acc, relu(acc)): one carried value, one scan.
  auto body = std::make_shared<Function>();
  body->name = "loop_body";
  Expr i = make_var("i", scalar_i64), go = make_var("go", scalar_bool),
       acc = make_var("acc", x_type);
  body->params = {i, go, acc};
  Expr next = make_var("next");
  body->body = make_let(next, make_call_function("twice", {acc}),
                        make_tuple({go, next, make_call("relu", {acc})}));
  Expr loop = make_loop(n, Expr(), {mm}, body, 1);
  main->body = make_let(
      mm, make_call("matmul", {x, make_constant(w)}, {{"alpha", 1.0}, {"trans_b", int64_t{0}}}),
      make_let(branch,
               make_if(c, make_call("relu", {mm}),
                       make_let(make_var("neg"), make_call("neg", {mm}), make_call("exp", {mm}))),
               make_let(looped, loop,
                        make_tuple({make_get_item(looped, 0), make_get_item(looped, 1), branch}))));
  m.functions = {main, twice};
  return m;
}

const char* const kExampleText = R"(dim seq: 1..512

fn @main(%x: f32[seq, 2], %c: bool[], %n: i64[]) {
  %mm: f32[seq, 2] = matmul(%x, const(f32[2, 2], [0.5, -1.25, 3, 1.00000001e-07])) {alpha=1.0, trans_b=0}
  %branch = if %c {
    return relu(%mm)
  } else {
    %neg = neg(%mm)
    return exp(%mm)
  }
  %looped = loop(max_trip=%n, cond=none, %mm) scan_outputs=1 fn(%i: i64[], %go: bool[], %acc: f32[seq, 2]) {
    %next = @twice(%acc)
    return (%go, %next, relu(%acc))
  }
  return (%looped.0, %looped.1, %branch)
}

fn @twice(%a: f32[seq, 2]) -> f32[seq, 2] {
  return add(%a, %a)
}
)";

TEST(IrText, PrintsEveryExpressionKind) { EXPECT_EQ(print_module(example_module()), kExampleText); }

TEST(IrText, ParseThenPrintIsAFixedPoint) {
  Module parsed = parse_module(kExampleText);
  EXPECT_EQ(print_module(parsed), kExampleText);
  ASSERT_EQ(parsed.functions.size(), 2u);
  ASSERT_EQ(parsed.dims.size(), 1u);
  EXPECT_EQ(parsed.dims[0].max, 512);
  // `seq` in every type is the one declared symbol.
  const Function& main = *parsed.functions[0];
  const Type& x = main.params[0].type();
  ASSERT_TRUE(x.is_tensor());
  EXPECT_TRUE(arith::structural_equal(x->dims[0].expr(), parsed.dims[0].var));
  // The loop's structure came back.
  Expr e = main.body;
  while (e.kind() == ExprKind::kLet && e->operands[1].kind() != ExprKind::kLoop) {
    e = e->operands[2];
  }
  ASSERT_EQ(e.kind(), ExprKind::kLet);
  const Expr& loop = e->operands[1];
  EXPECT_EQ(loop->index, 1);
  EXPECT_FALSE(loop_cond(loop).defined());
  EXPECT_TRUE(loop_max_trip(loop).same_node(main.params[2]));
  EXPECT_EQ(loop_carried(loop).size(), 1u);
}

TEST(IrText, ConstantsSurviveBitForBit) {
  std::vector<float> f{0.1f, -0.0f, 3.4028235e38f, 1.4e-45f, INFINITY, -INFINITY};
  Module m;
  auto fn = std::make_shared<Function>();
  fn->name = "main";
  vm::Tensor half = vm::Tensor::empty({2}, vm::DType::kFloat16);
  uint16_t bits[2] = {0x3c00, 0xfbff};
  std::memcpy(half.data(), bits, sizeof bits);
  fn->body = make_tuple(
      {make_constant(vm::Tensor::from_vector(f, {6}, kF32)),
       make_constant(
           vm::Tensor::from_vector(std::vector<int64_t>{INT64_MIN, 7}, {2}, vm::DType::kInt64)),
       make_constant(vm::Tensor::from_vector(std::vector<uint8_t>{1, 0}, {2}, vm::DType::kBool)),
       make_constant(half)});
  m.functions = {fn};
  PrintOptions full;
  full.max_constant_elements = SIZE_MAX;
  std::string text = print_module(m, full);
  Module back = parse_module(text);
  EXPECT_EQ(print_module(back, full), text);
  const Expr& tuple = back.functions[0]->body;
  const vm::Tensor& g = tuple->operands[0]->value;
  for (size_t i = 0; i < f.size(); ++i) {
    uint32_t want, got;
    std::memcpy(&want, &f[i], 4);
    std::memcpy(&got, &g.data_as<float>()[i], 4);
    EXPECT_EQ(got, want) << i;
  }
  EXPECT_EQ(tuple->operands[1]->value.data_as<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(tuple->operands[2]->value.data_as<uint8_t>()[0], 1);
  EXPECT_EQ(std::memcmp(tuple->operands[3]->value.data(), bits, sizeof bits), 0);
  // Past the limit, values are elided for reading.
  PrintOptions short_form;
  short_form.max_constant_elements = 4;
  EXPECT_NE(print_module(m, short_form).find("const(f32[6], ...6 values)"), std::string::npos);
}

TEST(IrText, SymbolicDimExpressionsAndAnyParse) {
  Module m = parse_module(R"(
dim w: 1..4096
fn @main(%x: f32[1, 3, 48, w]) -> f32[(w - 1) floordiv 8 + 1, ?] {
  return pool(%x) {kernel=[2, 2], mode="max"}
})");
  const Function& f = *m.functions[0];
  EXPECT_EQ(to_string(f.result_type), "f32[(w - 1) floordiv 8 + 1, ?]");
  const Expr& call = f.body;
  ASSERT_EQ(call.kind(), ExprKind::kCall);
  EXPECT_EQ(std::get<std::vector<int64_t>>(call->attrs.at("kernel")), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(std::get<std::string>(call->attrs.at("mode")), "max");
  Module t = parse_module("fn @f(%s: i64[2]) {\n  return fill(%s) {value=const(f32[1], [0.5])}\n}");
  const vm::Tensor& value = std::get<vm::Tensor>(t.functions[0]->body->attrs.at("value"));
  EXPECT_EQ(value.data_as<float>()[0], 0.5f);
}

TEST(IrText, ErrorsNameTheLineAndColumn) {
  EXPECT_USER_ERROR(parse_module("fn @f(%x: f32[2]) {\n  return %y\n}", "m.ir"),
                    "m.ir:2:10: unknown variable %y");
  EXPECT_USER_ERROR(parse_module("fn @f(%x: f99[2]) {\n  return %x\n}"), "unknown dtype 'f99'");
  EXPECT_USER_ERROR(parse_module("fn @f() {\n  return const(f32[3], [1, 2])\n}"),
                    "needs 3 values, got 2");
  EXPECT_USER_ERROR(parse_module("fn @f() {\n  return const(i32[1], [1.5])\n}"),
                    "an integer constant cannot hold 1.5");
  EXPECT_USER_ERROR(parse_module("fn @f(%x: f32[n +]) {\n  return %x\n}"), "bad dim 'n +'");
  EXPECT_USER_ERROR(parse_module("fn @f(%x: f32[2], %x: f32[2]) {\n  return %x\n}"),
                    "%x is defined twice in one scope");
  EXPECT_USER_ERROR(
      parse_module("fn @f(%n: i64[]) {\n  return loop(max_trip=%n, cond=none) scan_outputs=0 "
                   "fn(%i: i64[]) {\n return %i\n }\n}"),
      "the loop body takes 1 parameters, expected 2");
  EXPECT_USER_ERROR(parse_module("fn @f() {\n  return g() {a=1, a=2}\n}"),
                    "attribute 'a' given twice");
  EXPECT_USER_ERROR(parse_module("dim n: 5..2\n"), "dim n: empty range 5..2");
  EXPECT_USER_ERROR(parse_module("fn @f() {\n  return const(f16[1], hex\"zz00\")\n}"),
                    "'zz' is not a hex byte");
  EXPECT_USER_ERROR(parse_module("fn @f() {\n  return g() {s=\"\\xq1\"}\n}"),
                    "'q1' is not a hex byte");
  EXPECT_USER_ERROR(parse_module("fn @f() {\n  return \"x\n}"), "expected an expression");
  EXPECT_USER_ERROR(parse_module("fn @f() {\n  return (1\n}"), "expected an expression");
  EXPECT_USER_ERROR(parse_module("fn @f() {\n  return %0\n}\nfn @f() {\n  return %0\n}"),
                    "unknown variable %0");
  EXPECT_USER_ERROR(parse_module("fn @f() { return g() }\nfn @f() { return g() }"),
                    "function @f defined twice");
}

// Every prefix of a valid text and every single-character corruption parses or is a
// UserError: never a crash, never an internal error.
TEST(IrText, DamagedTextIsAUserErrorNeverACrash) {
  std::string text = kExampleText;
  auto parse_or_user_error = [](const std::string& t) {
    try {
      parse_module(t);
    } catch (const UserError&) {
    }
  };
  for (size_t n = 0; n < text.size(); ++n) {
    ASSERT_NO_FATAL_FAILURE(parse_or_user_error(text.substr(0, n))) << n;
  }
  for (size_t i = 0; i < text.size(); i += 3) {
    for (char c : {'(', '}', '%', '?', '0', '"', ']', ','}) {
      std::string damaged = text;
      damaged[i] = c;
      ASSERT_NO_FATAL_FAILURE(parse_or_user_error(damaged)) << i << " " << c;
    }
  }
}

}  // namespace
}  // namespace dynvm::compiler
