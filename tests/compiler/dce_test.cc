// Dead code elimination: unused lets go (chains of them in one pass, inside loop bodies and
// If branches too), used ones stay, a used run-time error stays, unreachable functions go.
#include "compiler/passes/dce.h"

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

namespace dynvm::compiler {
namespace {

std::string after_dce(const std::string& text, DceStats* stats) {
  PrintOptions p;
  p.types = false;
  return print_module(dce(parse_module(text), stats).module, p);
}

TEST(Dce, RemovesDeadLetsAndKeepsLiveOnes) {
  DceStats stats;
  std::string out = after_dce(R"(fn @main(%x: f32[2]) {
  %dead1 = Relu(%x)
  %dead2 = Add(%dead1, %x)
  %live = Mul(%x, %x)
  %y = Add(%live, %x)
  return %y
})",
                              &stats);
  // %dead2 is unused, which leaves %dead1 unused: both go in one pass.
  EXPECT_EQ(stats.lets_removed, 2u);
  EXPECT_EQ(out, R"(
fn @main(%x: f32[2]) {
  %live = Mul(%x, %x)
  %y = Add(%live, %x)
  return %y
}
)") << out;
}

TEST(Dce, CleansLoopBodiesAndIfBranches) {
  DceStats stats;
  std::string out = after_dce(R"(fn @main(%x: f32[2], %c: bool[]) {
  %outer = Neg(%x)
  %l = loop(max_trip=const(i64[], [3]), cond=none, %x) scan_outputs=0 fn(%i: i64[], %go: bool[], %h: f32[2]) {
    %unused = Sigmoid(%h)
    %next = Add(%h, %outer)
    return (%go, %next)
  }
  %r = if %c {
    %u = Relu(%x)
    return %l.0
  } else {
    %v = Tanh(%x)
    return %v
  }
  return %r
})",
                              &stats);
  EXPECT_EQ(stats.lets_removed, 2u);  // %unused and %u
  EXPECT_EQ(out.find("Sigmoid"), std::string::npos) << out;
  EXPECT_EQ(out.find("Relu"), std::string::npos) << out;
  // %outer is read only inside the loop body: it stays.
  EXPECT_NE(out.find("%outer = Neg(%x)"), std::string::npos) << out;
  EXPECT_NE(out.find("%v = Tanh(%x)"), std::string::npos) << out;
}

TEST(Dce, KeepsAUsedRunTimeErrorAndDropsAnUnusedOne) {
  // Built directly: the text form has no `dynvm.` op names.
  auto unreachable = [](const char* message) {
    return make_call("dynvm.Unreachable", {}, {{"message", std::string(message)}});
  };
  Expr x = make_var("x", tensor_type(vm::DType::kFloat32, {Dim(2)}));
  Expr c = make_var("c", tensor_type(vm::DType::kBool, {}));
  Expr never = make_var("never"), fail = make_var("fail"), r = make_var("r");
  auto f = std::make_shared<Function>();
  f->name = "main";
  f->params = {x, c};
  f->body = make_let(never, unreachable("unused"),
                     make_let(r, make_if(c, make_let(fail, unreachable("taken"), fail), x), r));
  Module m;
  m.functions.push_back(f);
  DceStats stats;
  std::string out = print_module(dce(m, &stats).module);
  EXPECT_EQ(stats.lets_removed, 1u);
  EXPECT_EQ(out.find("unused"), std::string::npos) << out;
  EXPECT_NE(out.find("taken"), std::string::npos) << out;
}

TEST(Dce, RemovesFunctionsTheEntryCannotReach) {
  DceStats stats;
  Module m = dce(parse_module(R"(fn @main(%x: f32[2]) {
  %y = @helper(%x)
  return %y
}

fn @helper(%x: f32[2]) {
  return Relu(%x)
}

fn @orphan(%x: f32[2]) {
  return Tanh(%x)
})"),
                 &stats)
                 .module;
  EXPECT_EQ(stats.functions_removed, 1u);
  ASSERT_EQ(m.functions.size(), 2u);
  EXPECT_NE(m.find_function("helper"), nullptr);
  EXPECT_EQ(m.find_function("orphan"), nullptr);
}

}  // namespace
}  // namespace dynvm::compiler
