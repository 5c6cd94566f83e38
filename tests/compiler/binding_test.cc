// Kernel bindings (compiler/op/binding.h): which ops have one and of what kind, keys that
// change exactly with what changes the kernel, compile-time inputs kept out of the kernel
// arguments, auto_pad resolved from the argument types, and clear refusals. The ONNX node
// tests check the bindings' values end to end (tests/conformance/).
#include "compiler/op/binding.h"

#include <gtest/gtest.h>

#include "tests/support/expect_user_error.h"

namespace dynvm::compiler {
namespace {

ValueFacts tensor(vm::DType dtype, const std::vector<int64_t>& dims) {
  std::vector<Dim> d(dims.begin(), dims.end());
  return tensor_facts(dtype, d);
}

ValueFacts i64_constant(const std::vector<int64_t>& values) {
  ValueFacts f = tensor(vm::DType::kInt64, {static_cast<int64_t>(values.size())});
  f.constant =
      vm::Tensor::from_vector(values, {static_cast<int64_t>(values.size())}, vm::DType::kInt64);
  return f;
}

KernelBinding bind(const std::string& op, const Attrs& attrs, std::vector<ValueFacts> inputs,
                   std::vector<Type> outputs = {tensor_type(vm::DType::kFloat32, {})}) {
  const BindFn* fn = find_binding(op);
  EXPECT_NE(fn, nullptr) << op;
  return (*fn)(BindContext("%y = " + op, attrs, std::move(inputs), std::move(outputs)));
}

ops::TensorType static_type(const std::vector<int64_t>& dims) {
  ops::TensorType t;
  for (int64_t d : dims) t.shape.push_back(arith::make_int(d));
  return t;
}

TEST(Binding, OpsWithoutABuilderHaveNoBinding) {
  // The recurrent ops are expanded into their cells before lowering.
  for (const char* op : {"LSTM", "GRU", "RNN"}) EXPECT_EQ(find_binding(op), nullptr) << op;
  for (const char* op : {"Range", "ConstantOfShape", "dynvm.RangeCount"}) {
    EXPECT_NE(find_binding(op), nullptr) << op;
  }
  EXPECT_NE(find_binding("Conv"), nullptr);
  EXPECT_NE(find_binding("PRelu"), nullptr);
}

TEST(Binding, ViewsAliasesAndHostValues) {
  ValueFacts x = tensor(vm::DType::kFloat32, {2, 3});
  EXPECT_EQ(bind("Reshape", {}, {x, i64_constant({6})}).kind, LoweringKind::kView);
  EXPECT_EQ(bind("Flatten", {}, {x}).kind, LoweringKind::kView);
  EXPECT_EQ(bind("Identity", {}, {x}).kind, LoweringKind::kAlias);
  EXPECT_EQ(bind("Dropout", {}, {x}).kind, LoweringKind::kAlias);
  EXPECT_EQ(bind("Shape", {}, {x}).kind, LoweringKind::kHost);
}

TEST(Binding, KeysChangeWithAttributesAndNotWithSpelledOutDefaults) {
  ValueFacts a = tensor(vm::DType::kFloat32, {4, 8}), b = tensor(vm::DType::kFloat32, {8, 4});
  std::string plain = bind("Gemm", {}, {a, b}).key;
  EXPECT_EQ(bind("Gemm", {{"alpha", 1.0}, {"transA", int64_t{0}}}, {a, b}).key, plain);
  EXPECT_NE(bind("Gemm", {{"alpha", 0.5}}, {a, b}).key, plain);
  EXPECT_NE(bind("Gemm", {{"transB", int64_t{1}}}, {a, b}).key, plain);
  // The argument dtypes are part of the key.
  ValueFacts a64 = tensor(vm::DType::kFloat64, {4, 8}), b64 = tensor(vm::DType::kFloat64, {8, 4});
  EXPECT_NE(bind("Gemm", {}, {a64, b64}).key, plain);
  EXPECT_NE(bind("Mod", {{"fmod", int64_t{1}}}, {a, a}).key, bind("Mod", {}, {a, a}).key);
  EXPECT_EQ(bind("ArgMax", {{"select_last_index", int64_t{0}}}, {a}).key,
            bind("ArgMax", {}, {a}).key);
  EXPECT_NE(bind("ArgMax", {{"select_last_index", int64_t{1}}}, {a}).key,
            bind("ArgMax", {}, {a}).key);
}

// LayerNormalization's Mean / InvStdDev: the kernel has as many outputs as the call, and
// the count is in the key (one kernel per output count).
TEST(Binding, LayerNormKernelHasTheCallsOutputs) {
  ValueFacts x = tensor(vm::DType::kFloat32, {2, 3, 4}), w = tensor(vm::DType::kFloat32, {3, 4});
  const Type y = tensor_type(vm::DType::kFloat32, {2, 3, 4});
  const Type stats = tensor_type(vm::DType::kFloat32, {2, 1, 1});
  KernelBinding one = bind("LayerNormalization", {{"axis", int64_t{1}}}, {x, w}, {y});
  KernelBinding three =
      bind("LayerNormalization", {{"axis", int64_t{1}}}, {x, w}, {y, stats, stats});
  EXPECT_NE(one.key, three.key);
  EXPECT_EQ(one.build({static_type({2, 3, 4}), static_type({3, 4})}).outputs.size(), 1u);
  ops::OpInstance op = three.build({static_type({2, 3, 4}), static_type({3, 4})});
  ASSERT_EQ(op.outputs.size(), 3u);
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(op.outputs[k]->dtype(), vm::DType::kFloat32);
    ASSERT_EQ(op.outputs[k]->shape().size(), 3u);
    EXPECT_EQ(op.outputs[k]->shape()[0].int_value(), 2);
    EXPECT_EQ(op.outputs[k]->shape()[1].int_value(), 1);
    EXPECT_EQ(op.outputs[k]->shape()[2].int_value(), 1);
  }
  EXPECT_USER_ERROR(
      bind("LayerNormalization", {{"stash_type", int64_t{11}}}, {x, w}, {y, stats, stats}),
      "stash_type other than 1");
}

TEST(Binding, CompileTimeInputsAreInTheKeyNotTheArguments) {
  ValueFacts x = tensor(vm::DType::kFloat32, {4, 6});
  KernelBinding s1 = bind("Slice", {}, {x, i64_constant({1}), i64_constant({3})});
  KernelBinding s2 = bind("Slice", {}, {x, i64_constant({0}), i64_constant({3})});
  EXPECT_EQ(s1.args, std::vector<size_t>{0});
  EXPECT_NE(s1.key, s2.key);
  ops::OpInstance op = s1.build({static_type({4, 6})});
  ASSERT_EQ(op.outputs.size(), 1u);
  EXPECT_EQ(op.outputs[0]->shape()[0].int_value(), 2);
  // Starts only known at run time are the kernel's arguments (read by it), not the key's.
  KernelBinding rt = bind("Slice", {}, {x, tensor(vm::DType::kInt64, {1}), i64_constant({3})});
  EXPECT_EQ(rt.args, (std::vector<size_t>{0, 1, 2}));
  EXPECT_NE(rt.key.find("run_time"), std::string::npos) << rt.key;
}

// Entries whose values type inference knows only as dims (a crop to another tensor's size:
// ends from Shape -> Gather -> Unsqueeze) need no kernel argument: the output's dims carry
// them, and the kernel is a plain strided copy that takes an epilogue. A start known only
// as a dim needs a constant end and a unit step; otherwise the kernel reads the entries.
TEST(Binding, SliceEndsKnownAsDimsComeFromTheOutputType) {
  arith::Var w("w"), h("h");
  ValueFacts x = tensor_facts(vm::DType::kFloat32, {Dim(4), Dim(w)});
  ValueFacts ends = tensor(vm::DType::kInt64, {1});
  ends.value = std::vector<Dim>{Dim(h)};
  const Type y = tensor_type(vm::DType::kFloat32, {Dim(4), Dim(h)});
  KernelBinding crop = bind("Slice", {}, {x, i64_constant({0}), ends, i64_constant({1})}, {y});
  EXPECT_EQ(crop.args, std::vector<size_t>{0});
  EXPECT_EQ(crop.key.find("run_time"), std::string::npos) << crop.key;
  ops::TensorType xt;
  xt.shape = {arith::make_int(4), arith::Expr(w)};
  ops::OpInstance op = crop.build({xt});
  EXPECT_TRUE(op.with_epilogue != nullptr);
  ASSERT_EQ(op.outputs[0]->shape().size(), 2u);
  EXPECT_FALSE(op.outputs[0]->shape()[1].is_int_imm());  // bound from the output argument
  // The last h elements: the start is a dim, the end ("to the end") a constant.
  ValueFacts starts = tensor(vm::DType::kInt64, {1});
  starts.value = std::vector<Dim>{Dim(arith::Expr(w) - arith::Expr(h))};
  KernelBinding tail =
      bind("Slice", {}, {x, starts, i64_constant({INT64_MAX}), i64_constant({1})}, {y});
  EXPECT_EQ(tail.args, std::vector<size_t>{0});
  // With a step of 2 the window cannot be placed from its end: the kernel reads the entries.
  KernelBinding strided =
      bind("Slice", {},
           {x, starts, i64_constant({INT64_MAX}), i64_constant({1}), i64_constant({2})}, {y});
  EXPECT_NE(strided.key.find("run_time"), std::string::npos) << strided.key;
}

// A kernel variant is the builder run on substituted input types (kernels/dispatch: t ->
// 8 * q for t % 8 == 0). Expand's target [n, 5, t] is captured from the call's types, so it
// must follow the substitution: a variant whose output kept t had a shape symbol nothing
// binds (an internal error compiling torch's F.normalize, whose Expand is over [n, 1, t]).
TEST(Binding, ExpandTargetsFollowTheVariantsInputDims) {
  arith::Var n("n"), t("t"), q("q");
  ValueFacts x = tensor_facts(vm::DType::kFloat32, {Dim(n), Dim(1), Dim(t)});
  const Type y = tensor_type(vm::DType::kFloat32, {Dim(n), Dim(5), Dim(t)});
  ValueFacts known = tensor(vm::DType::kInt64, {3});
  known.value = std::vector<Dim>{Dim(n), Dim(5), Dim(t)};
  ops::TensorType variant;
  variant.shape = {arith::Expr(n), arith::make_int(1), arith::Expr(q) * 8};
  for (const ValueFacts& shape : {known, tensor(vm::DType::kInt64, {3})}) {  // known, run time
    KernelBinding b = bind("Expand", {}, {x, shape}, {y});
    ops::OpInstance op = b.build({variant});
    const auto& out = op.outputs[0]->shape();
    ASSERT_EQ(out.size(), 3u) << b.key;
    EXPECT_TRUE(arith::structural_equal(out[2], arith::Expr(q) * 8)) << b.key;
    EXPECT_EQ(out[1].int_value(), 5) << b.key;
  }
}

TEST(Binding, ConvSamePaddingComesFromTheArgumentTypes) {
  ValueFacts x = tensor(vm::DType::kFloat32, {1, 2, 7, 7}),
             w = tensor(vm::DType::kFloat32, {4, 2, 3, 3});
  KernelBinding b = bind(
      "Conv", {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}}},
      {x, w});
  EXPECT_EQ(b.args, (std::vector<size_t>{0, 1}));
  ops::OpInstance op = b.build({static_type({1, 2, 7, 7}), static_type({4, 2, 3, 3})});
  const auto& shape = op.outputs[0]->shape();
  ASSERT_EQ(shape.size(), 4u);
  EXPECT_EQ(shape[2].int_value(), 4);  // ceil(7 / 2)
  EXPECT_EQ(shape[3].int_value(), 4);
}

TEST(Binding, RefusesWhatNoKernelComputes) {
  ValueFacts x = tensor(vm::DType::kFloat32, {2, 3, 4});
  EXPECT_USER_ERROR(bind("Softmax", {{"axis", int64_t{1}}, {"coerce_to_2d", int64_t{1}}}, {x}),
                    "opset < 13");
  // Over the last axis the legacy form is the one-axis kernel.
  EXPECT_EQ(bind("Softmax", {{"axis", int64_t{2}}, {"coerce_to_2d", int64_t{1}}}, {x}).kind,
            LoweringKind::kKernel);
  // ceil_mode pools are kernels (kernels/ops/pool.h).
  EXPECT_EQ(
      bind("MaxPool", {{"kernel_shape", std::vector<int64_t>{2}}, {"ceil_mode", int64_t{1}}}, {x})
          .kind,
      LoweringKind::kKernel);
}

// RoiAlign: every attribute in the key (coordinate_transformation_mode's default is opset
// 16's half_pixel), X, rois and batch_indices the kernel's arguments.
TEST(Binding, RoiAlignKeysEveryAttribute) {
  ValueFacts x = tensor(vm::DType::kFloat32, {1, 2, 8, 8}), r = tensor(vm::DType::kFloat32, {3, 4}),
             b = tensor(vm::DType::kInt64, {3});
  const std::vector<Type> y = {tensor_type(vm::DType::kFloat32, {3, 2, 1, 1})};
  KernelBinding plain = bind("RoiAlign", {}, {x, r, b}, y);
  EXPECT_EQ(plain.kind, LoweringKind::kKernel);
  EXPECT_EQ(plain.args, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(bind("RoiAlign",
                 {{"coordinate_transformation_mode", std::string("half_pixel")},
                  {"mode", std::string("avg")},
                  {"sampling_ratio", int64_t{0}},
                  {"spatial_scale", 1.0}},
                 {x, r, b}, y)
                .key,
            plain.key);
  for (const Attrs& changed :
       {Attrs{{"coordinate_transformation_mode", std::string("output_half_pixel")}},
        Attrs{{"mode", std::string("max")}}, Attrs{{"sampling_ratio", int64_t{2}}},
        Attrs{{"spatial_scale", 0.25}}, Attrs{{"output_height", int64_t{7}}}}) {
    EXPECT_NE(bind("RoiAlign", changed, {x, r, b}, y).key, plain.key);
  }
  ops::OpInstance op = plain.build(
      {static_type({1, 2, 8, 8}), static_type({3, 4}), {vm::DType::kInt64, {arith::make_int(3)}}});
  ASSERT_EQ(op.outputs.size(), 1u);
  EXPECT_EQ(op.outputs[0]->shape()[0].int_value(), 3);
  EXPECT_USER_ERROR(bind("RoiAlign", {{"mode", std::string("sum")}}, {x, r, b}, y),
                    "unknown mode 'sum'");
}

TEST(Binding, VariadicOpsOfManyInputsAreOneKernel) {
  ValueFacts x = tensor(vm::DType::kFloat32, {2, 3, 4});
  for (const char* op : {"Sum", "Max", "Min", "Mean"}) {
    KernelBinding b = bind(op, {}, {x, x, x});
    EXPECT_EQ(b.kind, LoweringKind::kKernel) << op;
    EXPECT_EQ(b.args, (std::vector<size_t>{0, 1, 2})) << op;
  }
  EXPECT_EQ(bind("Mean", {}, {x}).kind, LoweringKind::kAlias);
}

}  // namespace
}  // namespace dynvm::compiler
