// The ONNX importer: fixture models (fixtures/make_models.py) imported and printed as IR
// text that was checked by hand against the models; one-line errors for unsupported
// operators, domains, corrupt and missing files and unknown --dim names; and the two real
// models (scripts/fetch-models.sh, found in DYNVM_MODELS_DIR): every If, Loop-free LSTM,
// Conv and MatMul node arrives, and their full text reparses to the same text.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <tuple>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "frontends/onnx/importer.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::frontends::onnx_import {
namespace {

std::string fixture(const std::string& name) {
  return std::string(DYNVM_ONNX_FIXTURES) + "/" + name;
}

std::string imported(const std::string& name, const ImportOptions& options = {}) {
  return compiler::print_module(import_onnx_file(fixture(name), options));
}

TEST(OnnxImport, NestedIfReadsOuterValues) {
  EXPECT_EQ(imported("nested_if.onnx"), R"(dim n: 0..

fn @main(%x: f32[n], %a: bool[], %b: bool[]) -> (f32[n],) {
  %y = if %a {
    %y1 = if %b {
      %r = Relu(%x)
      return %r
    } else {
      %ng = Neg(%x)
      return %ng
    }
    return %y1
  } else {
    %e = Exp(%x)
    return %e
  }
  return (%y,)
}
)");
}

TEST(OnnxImport, LoopCarriesValuesAndStacksScanOutputs) {
  EXPECT_EQ(imported("loop.onnx"), R"(dim n: 0..
dim t: 0..

fn @main(%x: f32[n], %trips: i64[], %go: bool[]) -> (f32[n], f32[t, n]) {
  %the_loop_outputs = loop(max_trip=%trips, cond=%go, %x) scan_outputs=1 fn(%i: i64[], %cond_in: bool[], %acc_in: f32[n]) {
    %acc_out = Add(%acc_in, %x)
    %cond_out = Identity(%cond_in)
    %sq = Mul(%acc_out, %acc_out)
    return (%cond_out, %acc_out, %sq)
  }
  %final = %the_loop_outputs.0
  %stacked = %the_loop_outputs.1
  return (%final, %stacked)
}
)");
}

TEST(OnnxImport, ScanBecomesALoopOverItsAxis) {
  EXPECT_EQ(imported("scan.onnx"), R"(dim len: 0..

fn @main(%init: f32[4], %x: f32[len, 4]) -> (f32[4], f32[len, 4]) {
  %scan_trips = Gather(Shape(%x), const(i64[], [0])) {axis=0}
  %last_outputs = loop(max_trip=%scan_trips, cond=none, %init) scan_outputs=1 fn(%i: i64[], %cond: bool[], %s_in: f32[4]) {
    %row = Gather(%x, %i) {axis=0}
    %s_out = Add(%s_in, %row)
    %out_row = Identity(%s_out)
    return (%cond, %s_out, %out_row)
  }
  %last = %last_outputs.0
  %rows = %last_outputs.1
  return (%last, %rows)
}
)");
}

// Opset 9 attributes become the inputs of the newest forms.
// A Range whose limit is a Cast gets the uncast value as RangeCount's fourth operand, so
// that type inference counts arange(T, dtype=float) as T (compiler/op: dynvm.RangeCount).
TEST(OnnxImport, FloatRangeCountsTheValueItsLimitWasCastFrom) {
  const std::string text = imported("float_range.onnx");
  EXPECT_NE(text.find("%l = Cast(%t) {to=1}\n  %y_length = dynvm.RangeCount(%zero, %l, %one, %t)\n"
                      "  %y = Range(%zero, %l, %one, %y_length)\n"),
            std::string::npos)
      << text;
}

TEST(OnnxImport, LegacyOpsetFormsAreNormalized) {
  ImportOptions options;
  options.dims["batch"] = {1, 64};
  EXPECT_EQ(imported("legacy_ops.onnx", options), R"(dim batch: 1..64

fn @main(%x: f32[batch, 8]) -> (f32[batch, 6],) {
  %u = Unsqueeze(%x, const(i64[1], [0]))
  %s = Squeeze(%u, const(i64[1], [0]))
  %sl = Slice(%s, const(i64[1], [1]), const(i64[1], [-1]), const(i64[1], [1]))
  %c = Clip(%sl, const(f32[], [-1]), const(f32[], [1]))
  %y = Softmax(%c) {axis=1, coerce_to_2d=1}
  return (%y,)
}
)");
}

TEST(OnnxImport, ErrorsAreOneLineNamingTheNode) {
  EXPECT_USER_ERROR(import_onnx_file(fixture("unsupported.onnx")),
                    "unsupported.onnx: node 'rnd' (RandomUniformLike, opset 16): operator "
                    "RandomUniformLike is not supported");
  EXPECT_USER_ERROR(
      import_onnx_file(fixture("custom_domain.onnx")),
      "node #0 (FusedGelu, opset 16): operator domain 'com.example' is not supported");
  EXPECT_USER_ERROR(import_onnx_file(fixture("no_such_model.onnx")), "cannot open the file");
  EXPECT_USER_ERROR(import_onnx_bytes("this is not a protobuf", "junk.onnx"),
                    "junk.onnx: not an ONNX model");
  ImportOptions unknown_dim;
  unknown_dim.dims["seq"] = {1, 8};
  EXPECT_USER_ERROR(import_onnx_file(fixture("legacy_ops.onnx"), unknown_dim),
                    "--dim seq: the model has no symbolic dim of that name (its dims: batch)");
  ImportOptions cycle;
  cycle.same_dims["batch"] = "b2";
  cycle.same_dims["b2"] = "batch";
  EXPECT_USER_ERROR(import_onnx_file(fixture("legacy_ops.onnx"), cycle), "aliases form a cycle");
}

// A one-node model at opset 17: inputs (name, ONNX element type, dims), one output.
std::string one_node_model(
    const std::string& op,
    const std::vector<std::tuple<std::string, int, std::vector<int64_t>>>& inputs,
    const std::map<std::string, std::string>& string_attrs = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("node");
  for (const auto& [name, type, dims] : inputs) {
    n->add_input(name);
    onnx::ValueInfoProto* v = g->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  for (const auto& [name, value] : string_attrs) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  }
  n->add_output("y");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

std::vector<std::string> ops_of(const compiler::Module& m) {
  std::vector<std::string> ops;
  const std::string text = compiler::print_module(m);
  for (const char* op : {"CastLike", "Cast", "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
                         "LogSoftmax", "GatherElements", "ReduceMean", "ReduceSum"}) {
    if (text.find(std::string(" ") + op + "(") != std::string::npos) ops.push_back(op);
  }
  return ops;
}

// An operator dynvm has no rule for but whose ONNX schema defines it as a function of
// others arrives as that function's body (inline_functions.h): context-dependent bodies
// built for the inputs' element types, functions calling functions inlined in turn, and
// attributes the node leaves out taken from the schema's defaults.
TEST(OnnxImport, OperatorsWithFunctionBodiesAreInlined) {
  compiler::Module castlike =
      import_onnx_bytes(one_node_model("CastLike", {{"x", onnx::TensorProto::FLOAT, {3}},
                                                    {"like", onnx::TensorProto::INT64, {1}}}),
                        "castlike.onnx");
  EXPECT_EQ(ops_of(castlike), std::vector<std::string>{"Cast"});
  EXPECT_NE(compiler::print_module(castlike).find("{to=7}"), std::string::npos)
      << compiler::print_module(castlike);

  // SoftmaxCrossEntropyLoss's body calls NegativeLogLikelihoodLoss, whose body is built for
  // the labels' type; reduction is left to its default, "mean".
  compiler::Module sce = import_onnx_bytes(
      one_node_model("SoftmaxCrossEntropyLoss", {{"scores", onnx::TensorProto::FLOAT, {3, 5}},
                                                 {"labels", onnx::TensorProto::INT64, {3}}}),
      "sce.onnx");
  EXPECT_EQ(ops_of(sce), (std::vector<std::string>{"LogSoftmax", "GatherElements", "ReduceMean"}))
      << compiler::print_module(sce);
  compiler::Module summed = import_onnx_bytes(
      one_node_model(
          "SoftmaxCrossEntropyLoss",
          {{"scores", onnx::TensorProto::FLOAT, {3, 5}}, {"labels", onnx::TensorProto::INT64, {3}}},
          {{"reduction", "sum"}}),
      "sce_sum.onnx");
  EXPECT_EQ(ops_of(summed), (std::vector<std::string>{"LogSoftmax", "GatherElements", "ReduceSum"}))
      << compiler::print_module(summed);
  // An operator without a body is still refused by name.
  EXPECT_USER_ERROR(
      import_onnx_bytes(
          one_node_model("RandomUniformLike", {{"x", onnx::TensorProto::FLOAT, {3, 3}}}),
          "random.onnx"),
      "node 'node' (RandomUniformLike, opset 17): operator RandomUniformLike is not supported");
}

// --dim A=B: dim A of the model becomes dim B.
// A two-operand Einsum arrives as MatMul between Transposes (and Reshapes where a group has
// several letters), or as a summed product; diagonals and ellipses stay Einsum. Values: the
// conformance suite's einsum cases and the dynamic corpus's expert_mixture.
TEST(OnnxImport, EinsumMatrixProductsBecomeMatMul) {
  auto imported = [](const std::string& equation, std::vector<int64_t> a, std::vector<int64_t> b) {
    return compiler::print_module(import_onnx_bytes(
        one_node_model("Einsum",
                       {{"a", onnx::TensorProto::FLOAT, a}, {"b", onnx::TensorProto::FLOAT, b}},
                       {{"equation", equation}}),
        "einsum.onnx"));
  };
  auto count = [](const std::string& text, const std::string& op) {
    size_t n = 0;
    for (size_t at = text.find(" " + op + "("); at != std::string::npos;
         at = text.find(" " + op + "(", at + 1)) {
      ++n;
    }
    return n;
  };
  // Attention scores: k transposed to [b, h, d, k], no transpose after.
  std::string t = imported("bhqd,bhkd->bhqk", {2, 3, 5, 8}, {2, 3, 7, 8});
  EXPECT_EQ(count(t, "MatMul"), 1u) << t;
  EXPECT_EQ(count(t, "Transpose"), 1u) << t;
  EXPECT_NE(t.find("perm=[0, 1, 3, 2]"), std::string::npos) << t;
  EXPECT_EQ(count(t, "Einsum"), 0u) << t;
  // A linear layer over [b, t, c]: the product itself.
  t = imported("btc,cd->btd", {2, 9, 4}, {4, 6});
  EXPECT_EQ(count(t, "MatMul"), 1u) << t;
  EXPECT_EQ(count(t, "Transpose"), 0u) << t;
  // The output in another order: a Transpose after the product.
  t = imported("ij,jk->ki", {3, 4}, {4, 5});
  EXPECT_EQ(count(t, "MatMul"), 1u) << t;
  EXPECT_NE(t.find("perm=[1, 0]"), std::string::npos) << t;
  // Several letters to a group: each group one dim of a Reshape, the product reshaped back
  // (a mixture of experts' "nsd,edh->nseh": the experts' e and h are one free dim of B).
  t = imported("nsd,edh->nseh", {2, 9, 4}, {3, 4, 5});
  EXPECT_EQ(count(t, "MatMul"), 1u) << t;
  EXPECT_EQ(count(t, "Reshape"), 3u) << t;
  EXPECT_EQ(count(t, "Einsum"), 0u) << t;
  t = imported("ijk,jk->i", {3, 4, 5}, {4, 5});  // two contracted letters
  EXPECT_EQ(count(t, "MatMul"), 1u) << t;
  EXPECT_EQ(count(t, "Einsum"), 0u) << t;
  // A letter of one operand only, not in the output, is summed first.
  t = imported("ij,kl->ik", {3, 4}, {5, 6});
  EXPECT_EQ(count(t, "ReduceSum"), 2u) << t;
  EXPECT_EQ(count(t, "Einsum"), 0u) << t;
  // No free letter: a product summed over the contracted letters, no MatMul.
  t = imported("nchw,nchw->nc", {2, 3, 4, 5}, {2, 3, 4, 5});
  EXPECT_EQ(count(t, "Mul"), 1u) << t;
  EXPECT_EQ(count(t, "ReduceSum"), 1u) << t;
  EXPECT_EQ(count(t, "MatMul"), 0u) << t;
  // A diagonal or an ellipsis stays Einsum.
  for (const auto& [eq, a, b] :
       std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>>{
           {"ii,ij->j", {3, 3}, {3, 4}}, {"...j,jk->...k", {2, 3}, {3, 4}}}) {
    t = imported(eq, a, b);
    EXPECT_EQ(count(t, "Einsum"), 1u) << eq << "\n" << t;
    EXPECT_EQ(count(t, "MatMul"), 0u) << eq << "\n" << t;
  }
}

TEST(OnnxImport, DimAliasesMakeOneSymbol) {
  ImportOptions options;
  options.same_dims["n"] = "t";
  options.dims["t"] = {1, 9};
  std::string text = compiler::print_module(import_onnx_file(fixture("loop.onnx"), options));
  EXPECT_NE(text.find("dim t: 1..9\n"), std::string::npos) << text;
  EXPECT_NE(text.find("%x: f32[t]"), std::string::npos) << text;
  EXPECT_EQ(text.find("dim n"), std::string::npos) << text;
}

// Every prefix of a valid model is either imported or refused with a UserError.
TEST(OnnxImport, TruncatedModelsAreRefusedNotCrashed) {
  std::ifstream in(fixture("loop.onnx"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 100u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      import_onnx_bytes(std::string_view(bytes).substr(0, n), "cut.onnx");
    } catch (const UserError&) {
    }
  }
}

// ---- the real models ----

std::string model(const std::string& name) {
  const char* dir = std::getenv("DYNVM_MODELS_DIR");
  std::string path = std::string(dir != nullptr ? dir : DYNVM_DEFAULT_MODELS_DIR) + "/" + name;
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << path << " is missing: run scripts/fetch-models.sh (make test does)";
  }
  return path;
}

// Counts calls by op (and If / Loop nodes) everywhere, nested bodies included.
void count(const compiler::Expr& e, std::map<std::string, int>* counts) {
  if (!e.defined()) return;
  if (e.kind() == compiler::ExprKind::kCall) ++(*counts)[e->name];
  if (e.kind() == compiler::ExprKind::kIf) ++(*counts)["<if>"];
  if (e.kind() == compiler::ExprKind::kLoop) {
    ++(*counts)["<loop>"];
    count(e->body->body, counts);
  }
  for (const compiler::Expr& o : e->operands) count(o, counts);
}

TEST(OnnxImportRealModels, SileroVadKeepsItsNestedIfsAndLstms) {
  compiler::Module m = import_onnx_file(model("silero_vad_v5.onnx"));
  std::map<std::string, int> counts;
  count(m.functions[0]->body, &counts);
  // The model's node counts (python3-onnx), Constants aside.
  EXPECT_EQ(counts["<if>"], 25);
  EXPECT_EQ(counts["LSTM"], 4);
  EXPECT_EQ(counts["Conv"], 12);
  EXPECT_EQ(counts["Slice"], 60);
  EXPECT_EQ(counts["Unsqueeze"], 46);
  ASSERT_EQ(m.functions[0]->params.size(), 3u);
  EXPECT_EQ(compiler::to_string(m.functions[0]->params[1].type()), "f32[2, state_1, 128]");
  // The whole module, weights included, reads back to the same text.
  compiler::PrintOptions full;
  full.max_constant_elements = SIZE_MAX;
  std::string text = compiler::print_module(m, full);
  EXPECT_EQ(compiler::print_module(compiler::parse_module(text), full), text);
}

TEST(OnnxImportRealModels, PpOcrRecognizerImportsWithItsDynamicWidth) {
  ImportOptions options;
  options.dims["p2o.DynamicDimension.1"] = {8, 4096};
  compiler::Module m = import_onnx_file(model("ppocrv4_rec.onnx"), options);
  std::map<std::string, int> counts;
  count(m.functions[0]->body, &counts);
  EXPECT_EQ(counts["Conv"], 38);
  EXPECT_EQ(counts["MatMul"], 13);
  EXPECT_EQ(counts["Softmax"], 3);
  EXPECT_EQ(compiler::to_string(m.functions[0]->params[0].type()),
            "f32[p2o_DynamicDimension_0, 3, 48, p2o_DynamicDimension_1]");
  const compiler::DimSymbol* w = m.find_dim("p2o_DynamicDimension_1");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->min, 8);
  EXPECT_EQ(w->max, 4096);
}

}  // namespace
}  // namespace dynvm::frontends::onnx_import
