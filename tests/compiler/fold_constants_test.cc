// Constant folding: calls of constants evaluated by the compiler's own lowering and the VM
// (values worked out by hand), calls with a run-time operand left alone, folding inside If
// branches and Loop bodies, nothing compiled when nothing folds; the folded module still
// lowers and runs; and what folding does to the real models.
#include "compiler/passes/fold_constants.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/expand_recurrent.h"
#include "compiler/pipeline.h"
#include "frontends/onnx/importer.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

TypedModule folded(const std::string& text, FoldStats* stats) {
  return fold_constants(infer_types_with_facts(parse_module(text)), stats);
}

// The value bound to %name anywhere in `e` (nested bodies included), or undefined.
Expr bound(const Expr& e, const std::string& name) {
  if (!e.defined()) return Expr();
  if (e.kind() == ExprKind::kLet && e->operands[0]->name == name) return e->operands[1];
  if (e.kind() == ExprKind::kLoop) {
    if (Expr b = bound(e->body->body, name); b.defined()) return b;
  }
  for (const Expr& o : e->operands) {
    if (Expr b = bound(o, name); b.defined()) return b;
  }
  return Expr();
}

Expr bound(const Module& m, const std::string& name) {
  return bound(m.find_function(m.entry)->body, name);
}

std::vector<float> floats(const Expr& e) {
  EXPECT_TRUE(e.defined() && e.kind() == ExprKind::kConstant)
      << (e.defined() ? print_expr(e) : "undefined");
  if (!e.defined() || e.kind() != ExprKind::kConstant) return {};
  const vm::Tensor& t = e->value;
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel());
}

constexpr const char* kChain = R"(fn @main(%x: f32[2, 2]) {
  %a = Add(const(f32[2, 2], [1, 2, 3, 4]), const(f32[2, 2], [10, 20, 30, 40]))
  %t = Transpose(%a) {perm=[1, 0]}
  %m = MatMul(%t, const(f32[2, 2], [1, 2, 3, 4]))
  %y = Add(%x, %m)
  return %y
})";

TEST(FoldConstants, AddTransposeMatMulOfConstantsGiveTheirValues) {
  FoldStats stats;
  TypedModule t = folded(kChain, &stats);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.calls_folded, 3u);
  // a = [[11, 22], [33, 44]]; its transpose [[11, 33], [22, 44]];
  // times [[1, 2], [3, 4]]: [[11 + 99, 22 + 132], [22 + 132, 44 + 176]].
  EXPECT_EQ(floats(bound(t.module, "a")), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(floats(bound(t.module, "t")), (std::vector<float>{11, 33, 22, 44}));
  EXPECT_EQ(floats(bound(t.module, "m")), (std::vector<float>{110, 154, 154, 220}));
  // Re-typed: the folded variable is known as a constant to lowering.
  const Expr y = bound(t.module, "y");
  ASSERT_EQ(y.kind(), ExprKind::kCall);
  auto m = t.facts.find(y->operands[1]->var_id);
  ASSERT_NE(m, t.facts.end());
  ASSERT_TRUE(m->second.constant.defined());
  EXPECT_EQ(m->second.constant.data_as<float>()[3], 220.0f);
}

TEST(FoldConstants, CallsWithARunTimeOperandAreLeftAlone) {
  FoldStats stats;
  TypedModule t = folded(kChain, &stats);
  const Expr y = bound(t.module, "y");
  ASSERT_EQ(y.kind(), ExprKind::kCall);
  EXPECT_EQ(y->name, "Add");
  EXPECT_EQ(y->operands[0].kind(), ExprKind::kVar);

  // An operand computed inline from constants is folded in place; its user is not.
  TypedModule u = folded(R"(fn @main(%x: f32[2]) {
  %r = Relu(%x)
  %y = Mul(%r, Add(const(f32[2], [1, 2]), const(f32[], [0.5])))
  return %y
})",
                         &stats);
  EXPECT_EQ(stats.calls_folded, 1u);
  EXPECT_EQ(bound(u.module, "r")->name, "Relu");
  const Expr mul = bound(u.module, "y");
  ASSERT_EQ(mul.kind(), ExprKind::kCall);
  EXPECT_EQ(floats(mul->operands[1]), (std::vector<float>{1.5f, 2.5f}));
}

// `B, T, D = x.shape` over a symbolic T: D and what is computed from it are numbers
// inference knows; they become constants without a kernel, so that (say) an attention
// scale of sqrt(D / heads) reaches the passes that look for constants. T stays a Shape read.
TEST(FoldConstants, StaticDimsOfAShapeWithSymbolicOnesBecomeConstants) {
  FoldStats stats;
  TypedModule t = folded(R"(fn @main(%x: f32[2, t, 96]) {
  %s = Shape(%x)
  %d = Gather(%s, const(i64[], [2])) {axis=0}
  %h = Div(%d, const(i64[], [4]))
  %l = Gather(%s, const(i64[], [1])) {axis=0}
  %f = Cast(%h) {to=1}
  %y = Div(%x, %f)
  return (%y, %l)
})",
                         &stats);
  EXPECT_EQ(stats.error, "");
  for (const char* name : {"d", "h"}) {
    const Expr e = bound(t.module, name);
    ASSERT_EQ(e.kind(), ExprKind::kConstant) << name << ": " << print_expr(e);
    EXPECT_EQ(e->value.dtype(), vm::DType::kInt64);
    EXPECT_EQ(e->value.data_as<int64_t>()[0], std::string(name) == "d" ? 96 : 24) << name;
  }
  // The cast of a known value folds through the VM as before: 24.0.
  EXPECT_EQ(floats(bound(t.module, "f")), (std::vector<float>{24.0f}));
  EXPECT_EQ(bound(t.module, "l")->name, "Gather");
  EXPECT_EQ(bound(t.module, "s")->name, "Shape");
}

TEST(FoldConstants, FoldsInsideLoopBodiesAndIfBranches) {
  FoldStats stats;
  TypedModule t = folded(R"(fn @main(%h0: f32[1, 2], %c: bool[]) {
  %l = loop(max_trip=const(i64[], [3]), cond=none, %h0) scan_outputs=0 fn(%i: i64[], %go: bool[], %h: f32[1, 2]) {
    %wt = Transpose(const(f32[2, 2], [1, 2, 3, 4])) {perm=[1, 0]}
    %next = Add(%h, MatMul(%h, %wt))
    return (%go, %next)
  }
  %r = if %c {
    %k = Mul(const(f32[2], [1, -2]), const(f32[], [3]))
    return Add(%l.0, %k)
  } else {
    return %l.0
  }
  return %r
})",
                         &stats);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.calls_folded, 2u);
  EXPECT_EQ(floats(bound(t.module, "wt")), (std::vector<float>{1, 3, 2, 4}));
  EXPECT_EQ(floats(bound(t.module, "k")), (std::vector<float>{3, -6}));
  EXPECT_EQ(bound(t.module, "next")->name, "Add");  // reads the carried %h

  // The folded module lowers and runs: h <- h + h Wt three times from [1, 1]:
  // [1, 1] Wt = [1 + 2, 3 + 4] = [3, 7] -> h = [4, 8]; [4 + 16, 12 + 32] = [20, 44] ->
  // h = [24, 52]; [24 + 104, 72 + 208] = [128, 280] -> h = [152, 332]; then adds [3, -6].
  auto program = vm::Program::load(lower_module(t));
  vm::VirtualMachine machine(program);
  std::vector<vm::Value> in{
      vm::Tensor::from_vector(std::vector<float>{1, 1}, {1, 2}, vm::DType::kFloat32),
      vm::Tensor::from_vector(std::vector<uint8_t>{1}, {}, vm::DType::kBool)};
  const vm::Tensor y = machine.run(in).at(0).as_tensor();
  ASSERT_EQ(y.numel(), 2);
  EXPECT_EQ(y.data_as<float>()[0], 155.0f);
  EXPECT_EQ(y.data_as<float>()[1], 326.0f);
}

TEST(FoldConstants, MultiOutputCallsBecomeTuplesOfConstants) {
  FoldStats stats;
  TypedModule t = folded(R"(fn @main(%x: f32[3]) {
  %parts = Split(const(f32[4], [1, 2, 3, 4]), const(i64[2], [1, 3])) {axis=0, num_outputs=2}
  %sum = Add(%parts.1, const(f32[], [10]))
  %y = Add(%x, %sum)
  return %y
})",
                         &stats);
  EXPECT_EQ(stats.error, "");
  EXPECT_EQ(stats.calls_folded, 2u);
  const Expr parts = bound(t.module, "parts");
  ASSERT_EQ(parts.kind(), ExprKind::kTuple);
  EXPECT_EQ(floats(parts->operands[0]), (std::vector<float>{1}));
  EXPECT_EQ(floats(parts->operands[1]), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(floats(bound(t.module, "sum")), (std::vector<float>{12, 13, 14}));
}

TEST(FoldConstants, NothingToFoldReturnsTheModuleAsItWas) {
  TypedModule in = infer_types_with_facts(parse_module(R"(fn @main(%x: f32[2]) {
  %y = Add(%x, const(f32[2], [1, 2]))
  return %y
})"));
  FoldStats stats;
  TypedModule out = fold_constants(in, &stats);
  EXPECT_EQ(stats.calls_folded, 0u);
  EXPECT_TRUE(out.module.functions[0]->body.same_node(in.module.functions[0]->body));
}

TEST(FoldConstants, LargeOrNotStaticOutputsAreNotFolded) {
  FoldStats stats;
  // 2^25 elements from a scalar: past kMaxFoldedElements.
  TypedModule t = folded(R"(fn @main(%x: f32[2]) {
  %big = Expand(const(f32[], [1]), const(i64[2], [8192, 4096]))
  %y = Add(%x, const(f32[2], [1, 2]))
  return (%y, %big)
})",
                         &stats);
  EXPECT_EQ(stats.calls_folded, 0u);
  EXPECT_EQ(bound(t.module, "big")->name, "Expand");
}

// ---- the real models: how much folds, and that DCE then removes the leftovers ----

std::string model(const std::string& name) {
  const char* dir = std::getenv("DYNVM_MODELS_DIR");
  std::string path = std::string(dir != nullptr ? dir : DYNVM_DEFAULT_MODELS_DIR) + "/" + name;
  if (!std::filesystem::exists(path)) ADD_FAILURE() << path << " is missing: run make models";
  return path;
}

TEST(FoldConstantsRealModels, SileroLstmWeightMathIsFolded) {
  frontends::onnx_import::ImportOptions options;
  options.dims["input_1"] = {512, 512};
  options.same_dims["state_1"] = "input_0";
  Module m = expand_recurrent(
                 frontends::onnx_import::import_onnx_file(model("silero_vad_v5.onnx"), options))
                 .module;
  FoldStats stats;
  TypedModule t = fold_constants(infer_types_with_facts(m), &stats);
  EXPECT_EQ(stats.error, "");
  DceStats dead;
  dce(t.module, &dead);
  std::cout << "silero: " << stats.calls_folded << " calls folded, " << dead.lets_removed
            << " lets removed\n";
  // The LSTM's transposed weights and summed biases are constants now.
  EXPECT_EQ(bound(t.module, "lstm_wt").kind(), ExprKind::kConstant);
  EXPECT_EQ(bound(t.module, "lstm_rt").kind(), ExprKind::kConstant);
  EXPECT_GE(stats.calls_folded, 4u);
}

TEST(FoldConstantsRealModels, PpOcrFoldsAndStillTypes) {
  Module m = frontends::onnx_import::import_onnx_file(model("ppocrv4_rec.onnx"));
  FoldStats stats;
  TypedModule t = fold_constants(infer_types_with_facts(expand_recurrent(m).module), &stats);
  EXPECT_EQ(stats.error, "");
  DceStats dead;
  dce(t.module, &dead);
  std::cout << "ppocr: " << stats.calls_folded << " calls folded, " << dead.lets_removed
            << " lets removed\n";
  EXPECT_EQ(t.module.functions[0]->result_type->fields[0]->dims[2].value(), 6625);
}

}  // namespace
}  // namespace dynvm::compiler
