// Run-time symbols (compiler/passes/pass.h): operands ONNX passes as tensors and only the
// run time knows (a Reshape target, Range's bounds, a ConstantOfShape shape, an Expand
// target), and dims no compile-time rule can follow (an If whose branches differ in shape).
// Each model is compiled once with no options and run at several values; expected values
// are worked out by hand, and bad values fail with one error naming the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "compiler/ir/parser.h"
#include "compiler/pipeline.h"
#include "tests/support/expect_user_error.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

vm::VirtualMachine machine_for(const char* text) {
  return vm::VirtualMachine(vm::Program::load(compile(parse_module(text), CompileOptions{})));
}

vm::Tensor i64s(std::vector<int64_t> v, vm::Shape shape) {
  return vm::Tensor::from_vector(v, std::move(shape), vm::DType::kInt64);
}
vm::Tensor i64_scalar(int64_t v) { return i64s({v}, {}); }

vm::Tensor iota(int64_t n) {
  vm::Tensor t = vm::Tensor::empty({n}, vm::DType::kFloat32);
  for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = static_cast<float>(i);
  return t;
}

TEST(RuntimeSymbols, ReshapeToATargetReadAtRunTime) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[6], %s: i64[2]) {
  %y = Reshape(%x, %s)
  %z = Relu(%y)
  return %z
})");
  // -1 anywhere, plain sizes: the values move along, row-major.
  for (auto [s, want] : std::vector<std::pair<std::vector<int64_t>, vm::Shape>>{
           {{3, -1}, {3, 2}}, {{-1, 3}, {2, 3}}, {{6, 1}, {6, 1}}}) {
    std::vector<vm::Value> in{iota(6), i64s(s, {2})};
    vm::Tensor z = m.run(in).at(0).as_tensor();
    ASSERT_EQ(z.shape(), want);
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(z.data_as<float>()[i], static_cast<float>(i));
  }
  std::vector<vm::Value> wrong{iota(6), i64s({4, -1}, {2})};
  EXPECT_USER_ERROR(m.run(wrong), "%y = Reshape: the shape does not hold the input's elements");
  std::vector<vm::Value> two{iota(6), i64s({-1, -1}, {2})};
  EXPECT_USER_ERROR(m.run(two), "%y = Reshape: the shape has more than one -1");
  std::vector<vm::Value> negative{iota(6), i64s({-2, -3}, {2})};
  EXPECT_USER_ERROR(m.run(negative), "%y = Reshape:");
  // A 0 entry beside a -1 (the -1's quotient is never computed by dividing by 0).
  std::vector<vm::Value> zero{iota(6), i64s({-1, 0}, {2})};
  EXPECT_USER_ERROR(m.run(zero), "%y = Reshape: cannot infer a -1 entry next to a 0 entry");
}

TEST(RuntimeSymbols, ReshapeOfAnEmptyTensorToARunTimeTarget) {
  // h[mask] as exported: [k, 4] reshaped to [k, -1]; with k == 0 the -1 is not used.
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[k, 4], %s: i64[2]) {
  %y = Reshape(%x, %s)
  return %y
})");
  std::vector<vm::Value> in{vm::Tensor::empty({0, 4}, vm::DType::kFloat32), i64s({0, 4}, {2})};
  EXPECT_EQ(m.run(in).at(0).as_tensor().shape(), (vm::Shape{0, 4}));
}

TEST(RuntimeSymbols, RangeOfRunTimeBoundsEitherDirectionAndEmpty) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%a: i64[], %b: i64[], %d: i64[]) {
  %r = Range(%a, %b, %d)
  return %r
})");
  auto run = [&](int64_t a, int64_t b, int64_t d) {
    std::vector<vm::Value> in{i64_scalar(a), i64_scalar(b), i64_scalar(d)};
    vm::Tensor r = m.run(in).at(0).as_tensor();
    return std::vector<int64_t>(r.data_as<int64_t>(), r.data_as<int64_t>() + r.numel());
  };
  EXPECT_EQ(run(2, 11, 3), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(run(10, 4, -2), (std::vector<int64_t>{10, 8, 6}));
  EXPECT_EQ(run(0, 0, 1), (std::vector<int64_t>{}));
  EXPECT_EQ(run(5, 1, 1), (std::vector<int64_t>{}));
  std::vector<vm::Value> zero{i64_scalar(0), i64_scalar(3), i64_scalar(0)};
  EXPECT_USER_ERROR(m.run(zero), "%r = Range: delta is 0");
}

TEST(RuntimeSymbols, FloatRangeLengthComesFromAKernel) {
  // As the ONNX importer binds it: Range's length as a value of its own.
  Module module = parse_module(R"(fn @main(%a: f32[], %b: f32[], %d: f32[]) {
  return %a
})");
  auto main = std::make_shared<Function>(*module.find_function("main"));
  const std::vector<Expr> bounds(main->params.begin(), main->params.end());
  Expr n = make_var("n"), range = make_var("r");
  std::vector<Expr> with_length = bounds;
  with_length.push_back(n);
  main->body = make_let(n, make_call("dynvm.RangeCount", bounds),
                        make_let(range, make_call("Range", with_length), range));
  module.functions = {main};
  vm::VirtualMachine m(vm::Program::load(compile(module, CompileOptions{})));
  auto scalar = [](float v) {
    return vm::Tensor::from_vector(std::vector<float>{v}, {}, vm::DType::kFloat32);
  };
  std::vector<vm::Value> in{scalar(1.0f), scalar(2.0f), scalar(0.25f)};
  vm::Tensor r = m.run(in).at(0).as_tensor();
  ASSERT_EQ(r.shape(), (vm::Shape{4}));
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(r.data_as<float>()[i], 1.0f + 0.25f * i);
  std::vector<vm::Value> none{scalar(3.0f), scalar(1.0f), scalar(0.5f)};
  EXPECT_EQ(m.run(none).at(0).as_tensor().numel(), 0);
}

// torch's arange(T, dtype=float) as the importer binds it: the limit is a Cast of T, which
// RangeCount also gets uncast; with start and delta integral constants the length is T
// itself, not a run-time symbol that no other dim is known to equal.
TEST(RuntimeSymbols, FloatRangeToACastDimHasThatDimAsItsLength) {
  const std::string text = R"(dim t: 0..64
fn @main(%x: f32[t, 4]) {
  %s = Shape(%x)
  %t = Gather(%s, const(i64[], [0])) {axis = 0}
  %l = Cast(%t) {to = 1}
  %n = dynvm.RangeCount(const(f32[], [0]), %l, const(f32[], [1]), %t)
  %r = Range(const(f32[], [0]), %l, const(f32[], [1]), %n)
  return %r
})";
  TypedModule typed = infer_types_with_facts(parse_module(text));
  const Type& result = typed.module.find_function("main")->body.type();
  ASSERT_TRUE(result.defined() && result.is_tensor());
  ASSERT_EQ(result->dims.size(), 1u);
  EXPECT_EQ(to_string(result->dims[0]), "t");
  vm::VirtualMachine m(vm::Program::load(compile(parse_module(text), CompileOptions{})));
  for (int64_t t : {0, 1, 5}) {
    std::vector<vm::Value> in{vm::Tensor::empty({t, 4}, vm::DType::kFloat32)};
    vm::Tensor r = m.run(in).at(0).as_tensor();
    ASSERT_EQ(r.shape(), (vm::Shape{t}));
    for (int64_t i = 0; i < t; ++i) EXPECT_EQ(r.data_as<float>()[i], static_cast<float>(i));
  }
}

TEST(RuntimeSymbols, ConstantOfShapeReadAtRunTime) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%s: i64[2]) {
  %z = ConstantOfShape(%s)
  return %z
})");
  std::vector<vm::Value> in{i64s({2, 3}, {2})};
  vm::Tensor z = m.run(in).at(0).as_tensor();
  ASSERT_EQ(z.shape(), (vm::Shape{2, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(z.data_as<float>()[i], 0.0f);
  std::vector<vm::Value> empty{i64s({0, 3}, {2})};
  EXPECT_EQ(m.run(empty).at(0).as_tensor().shape(), (vm::Shape{0, 3}));
  std::vector<vm::Value> negative{i64s({2, -3}, {2})};
  EXPECT_USER_ERROR(m.run(negative), "%z = ConstantOfShape: output 0 would have the negative dim");
}

TEST(RuntimeSymbols, ExpandToARunTimeTargetChecksTheBroadcast) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[3, 1], %s: i64[2]) {
  %y = Expand(%x, %s)
  return %y
})");
  std::vector<vm::Value> in{
      vm::Tensor::from_vector(std::vector<float>{1, 2, 3}, {3, 1}, vm::DType::kFloat32),
      i64s({1, 4}, {2})};
  vm::Tensor y = m.run(in).at(0).as_tensor();
  ASSERT_EQ(y.shape(), (vm::Shape{3, 4}));
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(y.data_as<float>()[r * 4 + c], r + 1.0f);
  }
  std::vector<vm::Value> wrong{in[0], i64s({2, 4}, {2})};
  EXPECT_USER_ERROR(m.run(wrong),
                    "%y = Expand: cannot broadcast dims 3 and s[0] (neither equal nor 1)");
}

TEST(RuntimeSymbols, UnsqueezeAndSqueezeAtAxesReadAtRunTime) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[2, 3], %a: i64[2]) {
  %y = Unsqueeze(%x, %a)
  %z = Relu(%y)
  return %z
})");
  for (auto [axes, want] :
       std::vector<std::pair<std::vector<int64_t>, vm::Shape>>{{{0, 1}, {1, 1, 2, 3}},
                                                               {{3, 1}, {2, 1, 3, 1}},
                                                               {{-1, 0}, {1, 2, 3, 1}},
                                                               {{1, 3}, {2, 1, 3, 1}}}) {
    std::vector<vm::Value> in{vm::Tensor::empty({2, 3}, vm::DType::kFloat32), i64s(axes, {2})};
    EXPECT_EQ(m.run(in).at(0).as_tensor().shape(), want) << axes[0] << "," << axes[1];
  }
  std::vector<vm::Value> twice{vm::Tensor::empty({2, 3}, vm::DType::kFloat32), i64s({1, 1}, {2})};
  EXPECT_USER_ERROR(m.run(twice), "%y = Unsqueeze: axis 1 (a[1]) appears twice");
  std::vector<vm::Value> out_of_range{vm::Tensor::empty({2, 3}, vm::DType::kFloat32),
                                      i64s({0, 4}, {2})};
  EXPECT_USER_ERROR(m.run(out_of_range),
                    "%y = Unsqueeze: axis 1 (a[1]) is out of range for rank 4");

  vm::VirtualMachine sq = machine_for(R"(fn @main(%x: f32[1, 3, 1], %a: i64[1]) {
  %y = Squeeze(%x, %a)
  %z = Relu(%y)
  return %z
})");
  std::vector<vm::Value> first{vm::Tensor::empty({1, 3, 1}, vm::DType::kFloat32), i64s({0}, {1})};
  EXPECT_EQ(sq.run(first).at(0).as_tensor().shape(), (vm::Shape{3, 1}));
  std::vector<vm::Value> last{vm::Tensor::empty({1, 3, 1}, vm::DType::kFloat32), i64s({-1}, {1})};
  EXPECT_EQ(sq.run(last).at(0).as_tensor().shape(), (vm::Shape{1, 3}));
  std::vector<vm::Value> middle{vm::Tensor::empty({1, 3, 1}, vm::DType::kFloat32), i64s({1}, {1})};
  EXPECT_USER_ERROR(sq.run(middle), "%y = Squeeze: dim 1 (3) is squeezed but is not 1");
}

TEST(RuntimeSymbols, SliceWithBoundsAxesAndStepsReadAtRunTime) {
  vm::VirtualMachine m =
      machine_for(R"(fn @main(%x: f32[10], %s: i64[1], %e: i64[1], %a: i64[1], %t: i64[1]) {
  %y = Slice(%x, %s, %e, %a, %t)
  return %y
})");
  auto run = [&](int64_t s, int64_t e, int64_t t) {
    std::vector<vm::Value> in{iota(10), i64s({s}, {1}), i64s({e}, {1}), i64s({0}, {1}),
                              i64s({t}, {1})};
    vm::Tensor y = m.run(in).at(0).as_tensor();
    return std::vector<float>(y.data_as<float>(), y.data_as<float>() + y.numel());
  };
  EXPECT_EQ(run(2, 8, 3), (std::vector<float>{2, 5}));
  EXPECT_EQ(run(-3, 100, 1), (std::vector<float>{7, 8, 9}));     // from the end, clamped
  EXPECT_EQ(run(8, 1, -3), (std::vector<float>{8, 5, 2}));       // backwards
  EXPECT_EQ(run(100, -100, -4), (std::vector<float>{9, 5, 1}));  // clamped both ways
  EXPECT_EQ(run(5, 5, 1), (std::vector<float>{}));               // empty
  EXPECT_EQ(run(-1, std::numeric_limits<int64_t>::min(), -1).size(), 10u);
  std::vector<vm::Value> zero{iota(10), i64s({0}, {1}), i64s({5}, {1}), i64s({0}, {1}),
                              i64s({0}, {1})};
  EXPECT_USER_ERROR(m.run(zero), "%y = Slice: step 0 is 0");
  std::vector<vm::Value> axis{iota(10), i64s({0}, {1}), i64s({5}, {1}), i64s({1}, {1}),
                              i64s({1}, {1})};
  EXPECT_USER_ERROR(m.run(axis), "%y = Slice: axis 0 (a[0]) is out of range for rank 1");
}

TEST(RuntimeSymbols, SplitBySizesReadAtRunTime) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[6], %s: i64[2]) {
  %p = Split(%x, %s) {axis=0, num_outputs=2}
  return (%p.0, %p.1)
})");
  for (auto [a, b] : std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {0, 6}, {6, 0}}) {
    std::vector<vm::Value> in{iota(6), i64s({a, b}, {2})};
    std::vector<vm::Value> out = m.run(in);
    ASSERT_EQ(out.at(0).as_tensor().shape(), (vm::Shape{a}));
    ASSERT_EQ(out.at(1).as_tensor().shape(), (vm::Shape{b}));
    for (int64_t i = 0; i < b; ++i) {
      EXPECT_EQ(out[1].as_tensor().data_as<float>()[i], static_cast<float>(a + i));
    }
  }
  std::vector<vm::Value> short_sizes{iota(6), i64s({2, 3}, {2})};
  EXPECT_USER_ERROR(m.run(short_sizes), "%p = Split: the sizes do not add up to dim 0 (6)");
}

TEST(RuntimeSymbols, ReductionsOverAxesReadAtRunTime) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[2, 3], %a: i64[1]) {
  %s = ReduceSum(%x, %a) {keepdims=1}
  %m = ReduceMean(%x, %a) {keepdims=1}
  return (%s, %m)
})");
  // x = [[0, 1, 2], [3, 4, 5]]
  std::vector<vm::Value> rows{iota(6).reshape_view({2, 3}), i64s({0}, {1})};
  std::vector<vm::Value> out = m.run(rows);
  ASSERT_EQ(out[0].as_tensor().shape(), (vm::Shape{1, 3}));
  EXPECT_EQ(out[0].as_tensor().data_as<float>()[2], 7.0f);
  EXPECT_EQ(out[1].as_tensor().data_as<float>()[2], 3.5f);
  std::vector<vm::Value> cols{iota(6).reshape_view({2, 3}), i64s({-1}, {1})};
  out = m.run(cols);
  ASSERT_EQ(out[0].as_tensor().shape(), (vm::Shape{2, 1}));
  EXPECT_EQ(out[0].as_tensor().data_as<float>()[1], 12.0f);
  EXPECT_EQ(out[1].as_tensor().data_as<float>()[1], 4.0f);
  std::vector<vm::Value> bad{iota(6).reshape_view({2, 3}), i64s({2}, {1})};
  EXPECT_USER_ERROR(m.run(bad), "%s = ReduceSum: axis 0 (a[0]) is out of range for rank 2");
}

// TopK over rows whose width is an expression (b * t after Flatten): the output shares that
// dim with the input, and the kernel binds both from one argument.
TEST(RuntimeSymbols, TopKKeepsAnExpressionDimOfItsInput) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[n, b, t], %k: i64[1]) {
  %f = Flatten(%x) {axis=1}
  %t = TopK(%f, %k) {axis=0, largest=1, num_outputs=2}
  return %t.1
})");
  // x[i] = i flattened to [3, 4]: each column's largest rows are 2, 1, 0.
  vm::Tensor x = vm::Tensor::empty({3, 2, 2}, vm::DType::kFloat32);
  for (int64_t i = 0; i < 12; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  std::vector<vm::Value> in{x, i64s({2}, {1})};
  vm::Tensor rows = m.run(in).at(0).as_tensor();
  ASSERT_EQ(rows.shape(), (vm::Shape{2, 4}));
  EXPECT_EQ(std::vector<int64_t>(rows.data_as<int64_t>(), rows.data_as<int64_t>() + 8),
            (std::vector<int64_t>{2, 2, 2, 2, 1, 1, 1, 1}));
}

TEST(RuntimeSymbols, TopKWithKReadAtRunTime) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[2, 5], %k: i64[1]) {
  %t = TopK(%x, %k) {axis=-1, largest=1, num_outputs=2}
  %b = TopK(%x, %k) {axis=1, largest=0, num_outputs=2}
  return (%t.0, %t.1, %b.0, %b.1)
})");
  vm::Tensor x = vm::Tensor::from_vector(std::vector<float>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, {2, 5},
                                         vm::DType::kFloat32);
  auto floats = [](const vm::Tensor& t) {
    return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel());
  };
  auto ints = [](const vm::Tensor& t) {
    return std::vector<int64_t>(t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel());
  };
  std::vector<vm::Value> three{x, i64s({3}, {1})};
  std::vector<vm::Value> out = m.run(three);
  ASSERT_EQ(out[0].as_tensor().shape(), (vm::Shape{2, 3}));
  EXPECT_EQ(floats(out[0].as_tensor()), (std::vector<float>{5, 4, 3, 9, 6, 5}));
  EXPECT_EQ(ints(out[1].as_tensor()), (std::vector<int64_t>{4, 2, 0, 0, 2, 3}));
  // Smallest first; the tie of the two 1s goes to the lower index.
  EXPECT_EQ(floats(out[2].as_tensor()), (std::vector<float>{1, 1, 3, 2, 3, 5}));
  EXPECT_EQ(ints(out[3].as_tensor()), (std::vector<int64_t>{1, 3, 0, 1, 4, 3}));
  std::vector<vm::Value> none{x, i64s({0}, {1})};
  EXPECT_EQ(m.run(none)[0].as_tensor().shape(), (vm::Shape{2, 0}));
  std::vector<vm::Value> many{x, i64s({6}, {1})};
  EXPECT_USER_ERROR(m.run(many), "%t = TopK: k (k[0]) is not in 0..5");
}

std::vector<float> floats_of(const vm::Tensor& t) {
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel());
}

TEST(RuntimeSymbols, ResizeToTheSizeOfAnotherInputsShape) {
  // The FPN / U-Net pattern: F.interpolate(x, size=skip.shape[2:]), concatenated to skip.
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[n, c, h, w], %skip: f32[n, k, sh, sw]) {
  %xs = Shape(%x)
  %nc = Slice(%xs, const(i64[1], [0]), const(i64[1], [2]))
  %ss = Shape(%skip)
  %hw = Slice(%ss, const(i64[1], [2]), const(i64[1], [4]))
  %sizes = Concat(%nc, %hw) {axis=0}
  %y = Resize(%x, (), (), %sizes) {mode="nearest"}
  %z = Concat(%y, %skip) {axis=1}
  return %z
})");
  // x = [[[0, 1, 2]], [[3, 4, 5]]] to 3 x 2 (the ONNX reference, half_pixel nearest).
  vm::Tensor x = iota(6).reshape_view({1, 2, 1, 3});
  vm::Tensor skip = vm::Tensor::from_vector(std::vector<float>{9, 9, 9, 9, 9, 9}, {1, 1, 3, 2},
                                            vm::DType::kFloat32);
  std::vector<vm::Value> in{x, skip};
  vm::Tensor z = m.run(in).at(0).as_tensor();
  ASSERT_EQ(z.shape(), (vm::Shape{1, 3, 3, 2}));
  EXPECT_EQ(floats_of(z),
            (std::vector<float>{0, 2, 0, 2, 0, 2, 3, 5, 3, 5, 3, 5, 9, 9, 9, 9, 9, 9}));
  // Twice the size: each element repeated 2 x 2.
  std::vector<vm::Value> twice{x, vm::Tensor::empty({1, 1, 2, 6}, vm::DType::kFloat32)};
  z = m.run(twice).at(0).as_tensor();
  ASSERT_EQ(z.shape(), (vm::Shape{1, 3, 2, 6}));
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t col = 0; col < 6; ++col) {
      EXPECT_EQ(z.data_as<float>()[12 + r * 6 + col], 3.0f + static_cast<float>(col / 2));
    }
  }
  std::vector<vm::Value> empty{vm::Tensor::empty({1, 2, 0, 3}, vm::DType::kFloat32), skip};
  EXPECT_USER_ERROR(m.run(empty), "%y = Resize: input dim 2 is empty but its size is not 0");
}

TEST(RuntimeSymbols, ResizeByScalesReadAtRunTime) {
  // As the ONNX importer binds it: the output sizes as a value of their own.
  Module module = parse_module(R"(fn @main(%x: f32[1, 1, 2, 2], %s: f32[4]) {
  return %x
})");
  auto main = std::make_shared<Function>(*module.find_function("main"));
  Expr x = main->params[0], s = main->params[1];
  Expr sizes = make_var("sizes"), y = make_var("y");
  main->body = make_let(sizes, make_call("dynvm.ResizeOutputSizes", {x, s}),
                        make_let(y,
                                 make_call("Resize", {x, make_tuple({}), s, make_tuple({}), sizes},
                                           {{"mode", std::string("linear")}}),
                                 y));
  module.functions = {main};
  vm::VirtualMachine m(vm::Program::load(compile(module, CompileOptions{})));
  vm::Tensor x_in =
      vm::Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2}, vm::DType::kFloat32);
  auto scales = [](std::vector<float> v) {
    return vm::Tensor::from_vector(v, {4}, vm::DType::kFloat32);
  };
  // The ONNX documentation's test_resize_upsample_scales_linear.
  std::vector<vm::Value> up{x_in, scales({1, 1, 2, 2})};
  vm::Tensor r = m.run(up).at(0).as_tensor();
  ASSERT_EQ(r.shape(), (vm::Shape{1, 1, 4, 4}));
  EXPECT_EQ(floats_of(r), (std::vector<float>{1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75,
                                              3.25, 3.5, 3, 3.25, 3.75, 4}));
  // numpy: floor([2, 2] * [1.5, 0.5]) = [3, 1]; the reference gives [1.5, 2.5, 3.5].
  std::vector<vm::Value> mixed{x_in, scales({1, 1, 1.5, 0.5})};
  r = m.run(mixed).at(0).as_tensor();
  ASSERT_EQ(r.shape(), (vm::Shape{1, 1, 3, 1}));
  // (linear weighs in f32, the reference in f64)
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(r.data_as<float>()[i], 1.5 + i, 1e-6);
  std::vector<vm::Value> negative{x_in, scales({1, 1, -1, 2})};
  EXPECT_USER_ERROR(m.run(negative), "%y = Resize: scale 2 is not positive and finite");
}

TEST(RuntimeSymbols, CumSumAlongAnAxisReadAtRunTime) {
  // As the ONNX importer binds it: a scan over the middle of x viewed as [outer, n, inner].
  Module module = parse_module(R"(fn @main(%x: f32[2, 3], %a: i64[]) {
  return %x
})");
  auto main = std::make_shared<Function>(*module.find_function("main"));
  Expr x = main->params[0], a = main->params[1];
  Expr extents = make_var("y/extents"), view = make_var("y/view"), scan = make_var("y/scan"),
       shape = make_var("y/shape"), y = make_var("y");
  const Attrs allowzero{{"allowzero", int64_t{1}}};
  Expr one = make_constant(i64_scalar(1));
  main->body = make_let(
      extents, make_call("dynvm.AxisExtents", {x, a}),
      make_let(view, make_call("Reshape", {x, extents}, allowzero),
               make_let(scan, make_call("CumSum", {view, one}, {{"exclusive", int64_t{1}}}),
                        make_let(shape, make_call("Shape", {x}),
                                 make_let(y, make_call("Reshape", {scan, shape}, allowzero), y)))));
  module.functions = {main};
  vm::VirtualMachine m(vm::Program::load(compile(module, CompileOptions{})));
  // x = [[0, 1, 2], [3, 4, 5]], exclusive.
  auto run = [&](int64_t axis) {
    std::vector<vm::Value> in{iota(6).reshape_view({2, 3}), i64_scalar(axis)};
    vm::Tensor t = m.run(in).at(0).as_tensor();
    EXPECT_EQ(t.shape(), (vm::Shape{2, 3}));
    return floats_of(t);
  };
  EXPECT_EQ(run(0), (std::vector<float>{0, 0, 0, 0, 1, 2}));
  EXPECT_EQ(run(1), (std::vector<float>{0, 0, 1, 0, 3, 7}));
  EXPECT_EQ(run(-2), run(0));
  EXPECT_EQ(run(-1), run(1));
  std::vector<vm::Value> bad{iota(6).reshape_view({2, 3}), i64_scalar(2)};
  EXPECT_USER_ERROR(m.run(bad),
                    "%y/extents = dynvm.AxisExtents: the axis is out of range for rank 2");
}

TEST(RuntimeSymbols, UnrelatedSymbolicDimsBroadcastAtRunTime) {
  // An upsampled map added to a skip connection: two dims only the run time relates.
  vm::VirtualMachine m = machine_for(R"(dim n: 1..64
dim k: 1..64
fn @main(%x: f32[n, 2], %y: f32[k, 1]) {
  %z = Add(%x, %y)
  %w = Relu(%z)
  return %w
})");
  auto filled = [](int64_t rows, int64_t cols, float start) {
    vm::Tensor t = vm::Tensor::empty({rows, cols}, vm::DType::kFloat32);
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + static_cast<float>(i);
    return t;
  };
  for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{3, 3}, {1, 3}, {3, 1}}) {
    vm::Tensor x = filled(n, 2, 0), y = filled(k, 1, 10);
    std::vector<vm::Value> in{x, y};
    vm::Tensor w = m.run(in).at(0).as_tensor();
    ASSERT_EQ(w.shape(), (vm::Shape{std::max(n, k), 2})) << n << " " << k;
    for (int64_t r = 0; r < std::max(n, k); ++r) {
      for (int64_t c = 0; c < 2; ++c) {
        float want =
            x.data_as<float>()[(n == 1 ? 0 : r) * 2 + c] + y.data_as<float>()[k == 1 ? 0 : r];
        EXPECT_EQ(w.data_as<float>()[r * 2 + c], want) << n << " " << k << " " << r << " " << c;
      }
    }
  }
  std::vector<vm::Value> bad{filled(2, 2, 0), filled(3, 1, 0)};
  EXPECT_USER_ERROR(m.run(bad), "%z = Add: cannot broadcast dims n and k (neither equal nor 1)");
}

TEST(RuntimeSymbols, IfBranchesOfDifferentShapesJoinAtRunTime) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[4], %c: bool[]) {
  %r = if %c {
    return %x
  } else {
    return Concat(%x, %x) {axis=0}
  }
  %y = Neg(%r)
  return %y
})");
  for (bool c : {true, false}) {
    vm::Tensor cond = vm::Tensor::empty({}, vm::DType::kBool);
    cond.data_as<uint8_t>()[0] = c;
    std::vector<vm::Value> in{iota(4), cond};
    vm::Tensor y = m.run(in).at(0).as_tensor();
    ASSERT_EQ(y.numel(), c ? 4 : 8);
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data_as<float>()[i], -(i % 4) + 0.0f);
  }
}

TEST(RuntimeSymbols, IfBranchesOfDifferentRanksTakeTheirContinuation) {
  // `if last dim == 1 then squeeze it`: the branches' ranks differ and n decides which runs,
  // so the code after the If is typed once per branch (infer_types' split continuation),
  // up to where the types join again (the function's result).
  vm::VirtualMachine m = machine_for(R"ir(fn @main(%x: f32[2, n]) {
  %s = Shape(%x)
  %last = Gather(%s, const(i64[], [1])) {axis=0}
  %one = Equal(%last, const(i64[], [1]))
  %r = if %one {
    return Squeeze(%x, const(i64[1], [1]))
  } else {
    return %x
  }
  %rows = ReduceMax(%r, const(i64[1], [0])) {keepdims=0}
  %y = ReduceSum(%rows) {keepdims=0}
  return %y
})ir");
  for (int64_t n : {1, 3}) {
    std::vector<vm::Value> in{iota(2 * n).reshape_view({2, n})};
    vm::Tensor y = m.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), vm::Shape{});
    // n == 1: x squeezed to [0, 1], its max 1; n == 3: the columns' maxima 3 + 4 + 5.
    EXPECT_EQ(y.data_as<float>()[0], n == 1 ? 1.0f : 12.0f) << n;
  }
}

TEST(RuntimeSymbols, IndicesOutOfRangeFailNamingTheNode) {
  // What the importer binds before a Gather whose indices only the run time knows.
  vm::VirtualMachine m = machine_for(R"ir(fn @main(%x: f32[3, k], %i: i64[n]) {
  %bad = dynvm.IndicesOutOfRange(%x, %i) {axis=1, nd=0}
  %j = dynvm.CheckIndices(%i, %x, %bad) {axis=1, nd=0, node="node 'g' (Gather)"}
  %y = Gather(%x, %j) {axis=1}
  return %y
})ir");
  vm::Tensor x = iota(12).reshape_view({3, 4});
  std::vector<vm::Value> ok{x, i64s({3, -4, -1, 0}, {4})};
  vm::Tensor y = m.run(ok).at(0).as_tensor();
  ASSERT_EQ(y.shape(), (vm::Shape{3, 4}));
  const float want[] = {3, 0, 3, 0, 7, 4, 7, 4, 11, 8, 11, 8};
  for (int64_t e = 0; e < 12; ++e) EXPECT_EQ(y.data_as<float>()[e], want[e]) << e;
  for (int64_t bad : {4, -5}) {
    std::vector<vm::Value> in{x, i64s({0, bad}, {2})};
    EXPECT_USER_ERROR(m.run(in), "node 'g' (Gather): an index is out of range for axis 1 of data");
  }
  std::vector<vm::Value> none{x, i64s({}, {0})};  // no indices: nothing to check
  EXPECT_EQ(m.run(none).at(0).as_tensor().shape(), (vm::Shape{3, 0}));
}

TEST(RuntimeSymbols, NdIndicesAreCheckedAgainstTheDimEachAddresses) {
  vm::VirtualMachine m = machine_for(R"ir(fn @main(%x: f32[2, 3], %i: i64[n, 2]) {
  %bad = dynvm.IndicesOutOfRange(%x, %i) {axis=0, nd=1}
  %j = dynvm.CheckIndices(%i, %x, %bad) {axis=0, nd=1, node="node 'nd' (GatherND)"}
  %y = GatherND(%x, %j)
  return %y
})ir");
  vm::Tensor x = iota(6).reshape_view({2, 3});
  std::vector<vm::Value> ok{x, i64s({1, 2, -2, -3}, {2, 2})};
  vm::Tensor y = m.run(ok).at(0).as_tensor();
  ASSERT_EQ(y.shape(), (vm::Shape{2}));
  EXPECT_EQ(y.data_as<float>()[0], 5.0f);
  EXPECT_EQ(y.data_as<float>()[1], 0.0f);
  // 2 is in range for the second dim (3) but not for the first (2).
  std::vector<vm::Value> bad{x, i64s({0, 0, 2, 0}, {2, 2})};
  EXPECT_USER_ERROR(m.run(bad), "node 'nd' (GatherND): an index is out of range for data's dims");
}

TEST(RuntimeSymbols, ConstantIndicesAreCheckedWhenCompiled) {
  // A static axis decides now; a symbolic one leaves a check on the dim for the run.
  EXPECT_USER_ERROR(machine_for(R"ir(fn @main(%x: f32[3, 4]) {
  %j = dynvm.CheckIndices(const(i64[2], [1, 4]), %x) {axis=1, nd=0, node="node 'c' (Gather)"}
  %y = Gather(%x, %j) {axis=1}
  return %y
})ir"),
                    "node 'c' (Gather): index 4 is out of range for axis 1 of data (size 4)");
  vm::VirtualMachine m = machine_for(R"ir(fn @main(%x: f32[3, k]) {
  %j = dynvm.CheckIndices(const(i64[2], [1, -3]), %x) {axis=1, nd=0, node="node 'c' (Gather)"}
  %y = Gather(%x, %j) {axis=1}
  return %y
})ir");
  std::vector<vm::Value> wide{iota(12).reshape_view({3, 4})};
  EXPECT_EQ(m.run(wide).at(0).as_tensor().data_as<float>()[1], 1.0f);  // x[0, -3] = x[0, 1]
  std::vector<vm::Value> narrow{iota(6).reshape_view({3, 2})};
  EXPECT_USER_ERROR(m.run(narrow), "node 'c' (Gather): index -3 is out of range for axis 1");
}

}  // namespace
}  // namespace dynvm::compiler
