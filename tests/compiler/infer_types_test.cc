// Type inference with the op registry: shape arithmetic followed through Shape / Gather /
// Concat / Reshape, Ifs decided by the dims' declared ranges, loops and scans, errors that
// name the binding; and the real models' output types (PP-OCR's width dim checked against
// the output shapes ONNX Runtime gives at four widths).
#include "compiler/passes/infer_types.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/op/registry.h"
#include "frontends/onnx/importer.h"
#include "kernels/arith/evaluate.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::compiler {
namespace {

std::string inferred(const std::string& text) {
  PrintOptions options;
  return print_module(infer_types_with_facts(parse_module(text)).module, options);
}

TEST(InferTypes, ShapeArithmeticStaysSymbolic) {
  EXPECT_EQ(inferred(R"(dim n: 1..64
dim w: 1..4096
fn @main(%x: f32[n, 3, 48, w], %k: f32[8, 3, 3, 3]) {
  %s = Shape(%x)
  %batch = Gather(%s, const(i64[1], [0])) {axis=0}
  %shape = Concat(%batch, const(i64[2], [-1, 16])) {axis=0}
  %y = Reshape(%x, %shape)
  %c = Conv(%x, %k) {pads=[1, 1, 1, 1], strides=[2, 2]}
  return (%y, %c)
})"),
            R"(dim n: 1..64
dim w: 1..4096

fn @main(%x: f32[n, 3, 48, w], %k: f32[8, 3, 3, 3]) -> (f32[n, w*9, 16], f32[n, 8, 24, (w + 1) floordiv 2]) {
  %s: i64[4] = Shape(%x)
  %batch: i64[1] = Gather(%s, const(i64[1], [0])) {axis=0}
  %shape: i64[3] = Concat(%batch, const(i64[2], [-1, 16])) {axis=0}
  %y: f32[n, w*9, 16] = Reshape(%x, %shape)
  %c: f32[n, 8, 24, (w + 1) floordiv 2] = Conv(%x, %k) {pads=[1, 1, 1, 1], strides=[2, 2]}
  return (%y, %c)
}
)");
}

// A Reshape whose target is read off a Shape takes the dims as they are when they are the
// sizes of tensors that exist ((t + 1) floordiv 2 - 1, a strided conv's output height, is
// -1 at t = 0 by the bounds alone), merged ones included (n * t'), and a -1 that is a
// constant quotient is that constant: no select on 0 and -1 per entry, which every later
// Reshape nested in its own until a 6-block Conformer's dims ran the compiler out of memory.
TEST(InferTypes, ReshapesReadOffShapesKeepTheSizesTheyRead) {
  const std::string out = inferred(R"(dim n: 0..64
dim t: 0..4096
fn @main(%x: f32[n, 1, t, 7], %k: f32[4, 1, 3, 3]) {
  %c = Conv(%x, %k) {strides=[2, 2]}
  %p = Transpose(%c) {perm=[0, 2, 1, 3]}
  %s = Shape(%p)
  %b = Gather(%s, const(i64[1], [0])) {axis=0}
  %w = Gather(%s, const(i64[1], [1])) {axis=0}
  %bw = Mul(%b, %w)
  %flat = Concat(%bw, const(i64[1], [12])) {axis=0}
  %f = Reshape(%p, %flat)
  %split = Concat(%b, %w, const(i64[1], [-1])) {axis=0}
  %y = Reshape(%f, %split)
  %s2 = Shape(%y)
  %w2 = Gather(%s2, const(i64[1], [1])) {axis=0}
  %again = Concat(%w2, const(i64[2], [-1, 3])) {axis=0}
  %z = Reshape(%y, %again)
  return (%f, %y, %z)
})");
  EXPECT_EQ(out.find("select"), std::string::npos) << out;
  EXPECT_NE(out.find("-> (f32[n*((t + 1) floordiv 2) - n, 12], f32[n, (t + 1) floordiv 2 - 1, "
                     "12], f32[(t + 1) floordiv 2 - 1, n*4, 3])"),
            std::string::npos)
      << out;
}

// torch's `cls.expand(n, -1, -1)` exports a Where over the shape: Equal(shape, -1) is
// decided element by element (n >= 1 is never -1), so the Where's value is [n, 1, 96] and
// Expand's dims are n, not opaque values every later reshape would nest selects over.
TEST(InferTypes, WhereOverADecidedConditionKeepsTheValue) {
  const std::string out = inferred(R"(dim n: 1..64
fn @main(%x: f32[n, 5, 96], %cls: f32[1, 1, 96]) {
  %s = Shape(%x)
  %batch = Gather(%s, const(i64[1], [0])) {axis=0}
  %shape = Concat(%batch, const(i64[2], [-1, -1])) {axis=0}
  %minus = Mul(const(i64[3], [1, 1, 1]), const(i64[], [-1]))
  %is = Equal(%shape, %minus)
  %w = Where(%is, const(i64[3], [1, 1, 1]), %shape)
  %e = Expand(%cls, %w)
  %y = Concat(%e, %x) {axis=1}
  return (%y)
})");
  EXPECT_NE(out.find("%e: f32[n, 1, 96] = Expand"), std::string::npos) << out;
  EXPECT_NE(out.find("-> f32[n, 6, 96] {"), std::string::npos) << out;
}

// torch's pixel unshuffle after `F.pad(y, (0, y.shape[3] % 2, ...))`: the pad is a Mod of a
// dim read off a Shape. Its value is followed (w floormod 2, for either fmod), so the padded
// channels stay 8 and the conv after the unshuffle types; before, the pads were opaque and
// the conv's channels symbolic, which no conv kernel takes.
TEST(InferTypes, ModOfADimKeepsTheValue) {
  const std::string out = inferred(R"(dim n: 1..8
dim w: 1..4096
fn @main(%x: f32[n, 8, w], %k: f32[4, 8, 1]) {
  %s = Shape(%x)
  %last = Gather(%s, const(i64[1], [2])) {axis=0}
  %odd = Mod(%last, const(i64[1], [2]))
  %c_odd = Mod(%last, const(i64[1], [2])) {fmod=1}
  %pads = Concat(const(i64[2], [0, 0]), %odd, const(i64[2], [0, 0]), %c_odd) {axis=0}
  %p = Pad(%x, %pads)
  %y = Conv(%p, %k)
  return (%y)
})");
  EXPECT_NE(out.find("%p: f32[n, 8, w + (w floormod 2)*2] = Pad"), std::string::npos) << out;
  EXPECT_NE(out.find("-> f32[n, 4, w + (w floormod 2)*2] {"), std::string::npos) << out;
}

// `if last dim == 1 then squeeze`: decided by the declared range of n, so the If is gone.
TEST(InferTypes, IfDecidedByDimRangesBecomesItsBranch) {
  const char* text = R"(dim n: RANGE
fn @main(%x: f32[4, (n + 3) floordiv 4]) {
  %s = Shape(%x)
  %last = Gather(%s, const(i64[1], [-1])) {axis=0}
  %one = Equal(%last, const(i64[1], [1]))
  %r = if %one {
    return Squeeze(%x, const(i64[1], [-1]))
  } else {
    return Identity(%x)
  }
  return %r
})";
  auto with_range = [&](const std::string& range) {
    std::string t = text;
    t.replace(t.find("RANGE"), 5, range);
    return t;
  };
  std::string decided = inferred(with_range("1..4"));
  EXPECT_NE(decided.find("%r: f32[4] = Squeeze("), std::string::npos) << decided;
  EXPECT_EQ(decided.find("if "), std::string::npos) << decided;
  EXPECT_NE(inferred(with_range("5..8")).find("%r: f32[4, 2] = Identity("), std::string::npos);
  EXPECT_USER_ERROR(inferred(with_range("1..8")),
                    "%r = if: the branches' types differ and the condition depends on run-time "
                    "values or on dims whose declared ranges do not decide it (bound them with "
                    "--dim): f32[4] vs f32[4, (n + 3) floordiv 4]");
}

// A branch that cannot be typed for the declared dims becomes a run-time error (the other
// branch gives the type), with a warning; when neither branch types, the error stands.
TEST(InferTypes, UntypableBranchBecomesARunTimeError) {
  TypedModule t = infer_types_with_facts(parse_module(R"(fn @main(%x: f32[2, 3], %c: bool[]) {
  %r = if %c {
    return Relu(%x)
  } else {
    return Squeeze(%x, const(i64[1], [1]))
  }
  return %r
})"));
  std::string text = print_module(t.module);
  EXPECT_NE(text.find("%r: f32[2, 3] = if %c"), std::string::npos) << text;
  EXPECT_NE(text.find("dynvm.Unreachable() {message="), std::string::npos) << text;
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("the else branch cannot run for the declared dims"),
            std::string::npos);
  EXPECT_USER_ERROR(inferred(R"(fn @main(%x: f32[2, 3], %c: bool[]) {
  %r = if %c {
    return Squeeze(%x, const(i64[1], [0]))
  } else {
    return Squeeze(%x, const(i64[1], [1]))
  }
  return %r
})"),
                    "cannot squeeze axis 0 of extent 2");
}

TEST(InferTypes, LoopCarriedTypesAndScanOutputs) {
  // A fixed trip count with no condition stacks scans along a known dim; a condition that
  // may stop the loop makes the count unknown; a carried value that grows generalizes to Any.
  std::string out = inferred(R"(dim n: 1..100
fn @main(%x: f32[n]) {
  %trips = Gather(Shape(%x), const(i64[], [0])) {axis=0}
  %a = loop(max_trip=%trips, cond=none, %x) scan_outputs=1 fn(%i: i64[], %go: bool[], %acc: f32[n]) {
    return (%go, Add(%acc, %x), Relu(%acc))
  }
  %b = loop(max_trip=%trips, cond=const(bool[], [true]), %x) scan_outputs=0 fn(%i: i64[], %go: bool[], %v: f32[?]) {
    return (%go, Concat(%v, %v) {axis=0})
  }
  %c = loop(max_trip=%trips, cond=const(bool[], [true]), %x) scan_outputs=1 fn(%i: i64[], %go: bool[], %acc: f32[n]) {
    return (Identity(%go), %acc, Relu(%acc))
  }
  %d = loop(max_trip=%trips, cond=const(bool[], [true]), %x) scan_outputs=1 fn(%i: i64[], %go: bool[], %acc: f32[n]) {
    return (Not(%go), %acc, Relu(%acc))
  }
  return (%a.1, %b.0, %c.1, %d.1)
})");
  // A condition that starts true and stays true (by induction) keeps the trip count; one
  // that can turn false does not: that dim (and the grown carried one) is a run-time symbol
  // read from the loop's result.
  EXPECT_NE(out.find("-> (f32[n, n], f32[b.0.dim0], f32[n, n], f32[d.1.dim0, n])"),
            std::string::npos)
      << out;
}

TEST(InferTypes, ErrorsNameTheBinding) {
  EXPECT_USER_ERROR(inferred("fn @main(%x: f32[2]) {\n  %y = Frobnicate(%x)\n  return %y\n}"),
                    "%y = Frobnicate: no operator named Frobnicate");
  EXPECT_USER_ERROR(inferred("fn @main(%x: f32[2]) {\n  %y = Relu(%x, %x)\n  return %y\n}"),
                    "%y = Relu: takes 1..1 inputs, got 2");
  EXPECT_USER_ERROR(
      inferred("fn @main(%x: f32[2, 3]) {\n  %y = Squeeze(%x, const(i64[1], [1]))\n  return %y\n}"),
      "%y = Squeeze: cannot squeeze axis 1 of extent 3");
  EXPECT_USER_ERROR(inferred("fn @main(%x: f32[2], %s: i64[100]) {\n  %y = Reshape(%x, %s)\n  "
                             "return %y\n}"),
                    "%y = Reshape: Reshape's shape is computed at run time from a tensor that "
                    "is not a small integer vector");
  EXPECT_USER_ERROR(inferred("fn @main(%x: f32[2], %y: f32[3]) {\n  %z = Add(%x, %y)\n  "
                             "return %z\n}"),
                    "%z = Add: cannot broadcast dims 2 and 3");
  EXPECT_USER_ERROR(inferred("fn @main(%x) {\n  return %x\n}"), "parameter %x has no type");
}

// RoiAlign: num_rois from rois (symbolic), channels from X, the bins from the attributes;
// rois and batch_indices of different static lengths are refused.
TEST(InferTypes, RoiAlignKeepsNumRoisSymbolic) {
  EXPECT_EQ(inferred(R"(dim n: 0..
dim h: 0..
dim w: 0..
dim k: 0..
fn @main(%x: f32[n, 3, h, w], %r: f32[k, 4], %b: i64[k]) {
  %y = RoiAlign(%x, %r, %b) {output_height=5, output_width=7}
  return %y
})"),
            R"(dim n: 0..
dim h: 0..
dim w: 0..
dim k: 0..

fn @main(%x: f32[n, 3, h, w], %r: f32[k, 4], %b: i64[k]) -> f32[k, 3, 5, 7] {
  %y: f32[k, 3, 5, 7] = RoiAlign(%x, %r, %b) {output_height=5, output_width=7}
  return %y
}
)");
  EXPECT_USER_ERROR(inferred("fn @main(%x: f32[1, 3, 8, 8], %r: f32[2, 4], %b: i64[3]) {\n"
                             "  %y = RoiAlign(%x, %r, %b)\n  return %y\n}"),
                    "%y = RoiAlign: rois has 2 rows but batch_indices 3 elements");
  EXPECT_USER_ERROR(inferred("fn @main(%x: f32[1, 3, 8, 8], %r: f32[2, 5], %b: i64[2]) {\n"
                             "  %y = RoiAlign(%x, %r, %b)\n  return %y\n}"),
                    "%y = RoiAlign: rois must have 4 columns");
}

TEST(OpRegistry, EveryImportableOperatorHasATypeRelation) {
  for (const char* op : {"Add",
                         "Conv",
                         "LSTM",
                         "Reshape",
                         "Slice",
                         "Softmax",
                         "Resize",
                         "Gather",
                         "ReduceMean",
                         "BatchNormalization",
                         "MatMul",
                         "Concat",
                         "Where",
                         "CumSum",
                         "Pad",
                         "Expand",
                         "NonZero",
                         "Unique",
                         "NonMaxSuppression",
                         "ScatterND",
                         "Einsum",
                         "DFT",
                         "RoiAlign"}) {
    EXPECT_NE(find_op(op), nullptr) << op;
  }
  EXPECT_EQ(find_op("RandomUniformLike"), nullptr);  // random generators are out of scope
}

// ---- the real models ----

std::string model(const std::string& name) {
  const char* dir = std::getenv("DYNVM_MODELS_DIR");
  std::string path = std::string(dir != nullptr ? dir : DYNVM_DEFAULT_MODELS_DIR) + "/" + name;
  if (!std::filesystem::exists(path)) ADD_FAILURE() << path << " is missing: run make models";
  return path;
}

TEST(InferTypesRealModels, PpOcrOutputWidthMatchesOnnxRuntime) {
  Module m =
      infer_types_with_facts(frontends::onnx_import::import_onnx_file(model("ppocrv4_rec.onnx")))
          .module;
  const Type& out = m.functions[0]->result_type->fields[0];
  ASSERT_EQ(out->dims.size(), 3u);
  EXPECT_EQ(out->dims[2].value(), 6625);
  // ONNX Runtime 1.30 (shared/peer/ort_run.mjs), x = [1, 3, 48, W]: output [1, T, 6625].
  const std::map<int64_t, int64_t> ort_t = {{37, 5}, {100, 12}, {320, 40}, {960, 120}};
  const DimSymbol* w = m.find_dim("p2o_DynamicDimension_1");
  ASSERT_NE(w, nullptr);
  for (auto [width, t] : ort_t) {
    arith::VarValues env{{w->var.id(), width}};
    EXPECT_EQ(arith::evaluate(out->dims[1].expr(), env), t) << "W = " << width;
  }
}

TEST(InferTypesRealModels, SileroTypesOnceItsChunkLengthIsBounded) {
  frontends::onnx_import::ImportOptions options;
  options.dims["input_1"] = {256, 256};
  Module m = infer_types_with_facts(
                 frontends::onnx_import::import_onnx_file(model("silero_vad_v5.onnx"), options))
                 .module;
  EXPECT_EQ(to_string(m.functions[0]->result_type), "(f32[input_0, 1], f32[2, input_0, 128])");
  // Unbounded, the 16 kHz branch's `if last dim == 1` guard cannot be decided: the code after
  // it is typed once per branch, and the outputs join again.
  Module free =
      infer_types(frontends::onnx_import::import_onnx_file(model("silero_vad_v5.onnx"))).module;
  EXPECT_EQ(to_string(free.functions[0]->result_type), "(f32[input_0, 1], f32[2, input_0, 128])");
}

}  // namespace
}  // namespace dynvm::compiler
