// A function body that is one let chain of 100,000 bindings goes through every step of the
// compiler (and the graph IR verifier after each) and is destroyed, without one stack frame
// per binding anywhere: a pass that recursed down the chain would overflow the stack (8 MiB,
// a few hundred bytes a frame), so this test crashes rather than fails if one does. The
// chain is shape arithmetic, which no pass may remove: %v0 = Shape(x), %v(k+1) = %vk + 1,
// so the executable returns [n + 100000] for x of n elements, beside a kernel's Relu(x).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "compiler/ir/functor.h"
#include "compiler/ir/verify.h"
#include "compiler/pipeline.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

constexpr int64_t kDepth = 100000;

Expr i64_vector(int64_t v) {
  return make_constant(vm::Tensor::from_vector(std::vector<int64_t>{v}, {1}, vm::DType::kInt64));
}

// fn @main(%x: f32[n]) { %v0 = Shape(%x); %v1 = Add(%v0, [1]); ...; %y = Relu(%x);
// return (%v100000, %y) }
Module deep_chain() {
  Module m;
  arith::Var n("n");
  m.dims.push_back({n, 1, 4096});
  auto main = std::make_shared<Function>();
  main->name = "main";
  Expr x = make_var("x", tensor_type(vm::DType::kFloat32, {Dim(n)}));
  main->params = {x};
  std::vector<Binding> bindings;
  Expr v = make_var("v0");
  bindings.push_back({v, make_call("Shape", {x})});
  Expr one = i64_vector(1);
  for (int64_t k = 1; k <= kDepth; ++k) {
    Expr next = make_var("v" + std::to_string(k));
    bindings.push_back({next, make_call("Add", {v, one})});
    v = next;
  }
  Expr y = make_var("y");
  bindings.push_back({y, make_call("Relu", {x})});
  main->body = make_let_chain(bindings, make_tuple({v, y}));
  main->result_names = {"length", "y"};
  m.functions.push_back(main);
  return m;
}

// Counts the bindings of a module (the walk itself must be iterative too).
class CountBindings : public ExprVisitor {
 public:
  size_t count = 0;

 protected:
  void visit_binding(const Expr& var, const Expr& value) override {
    ++count;
    visit(value);
  }
};

TEST(DeepChain, EveryStepWalksAHundredThousandLetsIteratively) {
  Module m = deep_chain();
  CountBindings bindings;
  bindings.visit_module(m);
  EXPECT_EQ(bindings.count, static_cast<size_t>(kDepth + 2));
  verify_module(m, false, "the test's builder");

  CompileOptions options;
  options.verify_each = true;  // the verifier walks the chain after every step too
  options.time_passes = true;
  std::ostringstream log;
  options.log = &log;
  vm::Executable exe = compile(std::move(m), options);
  if (std::getenv("DYNVM_TEST_LOG") != nullptr) std::cerr << log.str();
  for (const std::string& step : pipeline_step_names()) {
    EXPECT_NE(log.str().find("[time] " + step + ": "), std::string::npos) << step;
  }

  vm::Tensor x = vm::Tensor::from_vector(
      std::vector<float>{-2.5f, 0.0f, 1.5f, -0.0f, 3.0f, -1.0f, 7.25f}, {7}, vm::DType::kFloat32);
  vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
  std::vector<vm::Value> inputs{vm::Value(x)};
  std::vector<vm::Value> out = machine.run(inputs);
  ASSERT_EQ(out.size(), 2u);
  const vm::Tensor& length = out[0].as_tensor();
  ASSERT_EQ(length.numel(), 1);
  EXPECT_EQ(length.data_as<int64_t>()[0], 7 + kDepth);
  const vm::Tensor& y = out[1].as_tensor();
  ASSERT_EQ(y.numel(), 7);
  const float want[] = {0.0f, 0.0f, 1.5f, 0.0f, 3.0f, 0.0f, 7.25f};
  for (int k = 0; k < 7; ++k) EXPECT_EQ(y.data_as<float>()[k], want[k]) << k;
}

// A mutator that changes nothing returns the very node it was given, however long the
// chain, and one that changes the last binding rebuilds the chain without recursion.
class RenameLast : public ExprMutator {
 protected:
  Binding rewrite_binding(const Expr& var, const Expr& value) override {
    if (var->name != "y") return {var, mutate(value)};
    return {var, make_call("Neg", value->operands)};
  }
};

TEST(DeepChain, AnUnchangedChainIsTheSameNodeAndAChangedOneIsRebuilt) {
  Module m = deep_chain();
  bool changed = true;
  Module same = ExprMutator().mutate_module(m, &changed);
  EXPECT_FALSE(changed);
  EXPECT_TRUE(same.functions[0]->body.same_node(m.functions[0]->body));
  changed = false;
  Module other = RenameLast().mutate_module(m, &changed);
  EXPECT_TRUE(changed);
  LetChain chain = flatten_lets(other.functions[0]->body);
  ASSERT_EQ(chain.bindings.size(), static_cast<size_t>(kDepth + 2));
  EXPECT_EQ(chain.bindings.back().value->name, "Neg");
  // The original is untouched.
  EXPECT_EQ(flatten_lets(m.functions[0]->body).bindings.back().value->name, "Relu");
}

}  // namespace
}  // namespace dynvm::compiler
