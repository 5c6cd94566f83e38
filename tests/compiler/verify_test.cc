// The graph IR verifier: well-formed modules (parsed, typed, after every pass of the real
// pipeline elsewhere) pass; each broken invariant is an InternalError that names the pass
// and what is wrong.
#include "compiler/ir/verify.h"

#include <gtest/gtest.h>

#include "compiler/ir/functor.h"
#include "compiler/ir/parser.h"
#include "compiler/passes/infer_types.h"

namespace dynvm::compiler {
namespace {

// Expects verify_module to throw an InternalError whose message has every fragment.
void expect_invalid(const Module& m, bool typed, const std::vector<std::string>& fragments) {
  try {
    verify_module(m, typed, "some_pass");
    ADD_FAILURE() << "the module passed the verifier";
  } catch (const InternalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the IR after some_pass is invalid"), std::string::npos) << what;
    for (const std::string& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << what;
  }
}

const char* kLoopAndIf = R"(fn @main(%x: f32[2], %c: bool[]) {
  %outer = Neg(%x)
  %l = loop(max_trip=const(i64[], [3]), cond=none, %x) scan_outputs=1 fn(%i: i64[], %go: bool[], %h: f32[2]) {
    %next = Add(%h, %outer)
    return (%go, %next, %h)
  }
  %r = if %c {
    %u = Relu(%x)
    return %u
  } else {
    return %l.0
  }
  return %r
})";

TEST(VerifyModule, WellFormedModulesPassUntypedAndTyped) {
  Module m = parse_module(kLoopAndIf);
  verify_module(m, false, "parse");
  verify_module(infer_types_with_facts(m).module, true, "infer_types");
}

TEST(VerifyModule, AnUntypedModuleIsNotATypedOne) {
  expect_invalid(parse_module("fn @main(%x) {\n  %y = Relu(%x)\n  return %y\n}"), true,
                 {"@main", "has no type"});
}

// A branch's bindings are out of scope after the If.
TEST(VerifyModule, AUseOutsideItsBindingsScopeIsCaught) {
  Module m = parse_module(kLoopAndIf);
  auto f = std::make_shared<Function>(*m.functions[0]);
  LetChain chain = flatten_lets(f->body);
  const Expr& branch = chain.bindings.back().value->operands[1];  // the then branch
  Expr inner = flatten_lets(branch).bindings[0].var;              // %u
  f->body = make_let_chain(chain.bindings, make_tuple({chain.body, inner}));
  m.functions[0] = f;
  expect_invalid(m, false, {"%u", "is used where no binding of it is in scope"});
}

TEST(VerifyModule, AVariableBoundTwiceIsCaught) {
  Module m = parse_module("fn @main(%x: f32[2]) {\n  %y = Relu(%x)\n  return %y\n}");
  auto f = std::make_shared<Function>(*m.functions[0]);
  LetChain chain = flatten_lets(f->body);
  chain.bindings.push_back({chain.bindings[0].var, make_call("Neg", {f->params[0]})});
  f->body = make_let_chain(chain.bindings, chain.body);
  m.functions[0] = f;
  expect_invalid(m, false, {"%y", "is bound twice"});
}

TEST(VerifyModule, CallsOfModuleFunctionsMustMatchTheirArity) {
  expect_invalid(parse_module(R"(fn @main(%x: f32[2]) {
  %y = @helper(%x, %x)
  return %y
}

fn @helper(%a: f32[2]) {
  return %a
})"),
                 false, {"@helper takes 1 arguments, called with 2"});
  expect_invalid(parse_module("fn @main(%x: f32[2]) {\n  %y = @nowhere(%x)\n  return %y\n}"), false,
                 {"@nowhere, which the module does not define"});
}

TEST(VerifyModule, TheEntryMustExist) {
  Module m = parse_module("fn @f(%x: f32[2]) {\n  return %x\n}");
  m.entry = "main";
  expect_invalid(m, false, {"the entry @main"});
}

}  // namespace
}  // namespace dynvm::compiler
