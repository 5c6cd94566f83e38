// Sequences and optionals (compiler/op/ops_sequence.h): IR text programs compiled with no
// options and run on the VM, where a sequence is a tuple of its elements and an optional a
// tuple of zero or one value. Expected values are worked out by hand.
#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/type.h"
#include "compiler/pipeline.h"
#include "tests/support/expect_user_error.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

vm::VirtualMachine machine_for(const char* text) {
  return vm::VirtualMachine(vm::Program::load(compile(parse_module(text), CompileOptions{})));
}

vm::Tensor f32s(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return vm::Tensor::from_vector(v, {n}, vm::DType::kFloat32);
}
vm::Tensor i64_scalar(int64_t v) {
  return vm::Tensor::from_vector(std::vector<int64_t>{v}, {}, vm::DType::kInt64);
}
std::vector<float> floats(const vm::Value& v) {
  const vm::Tensor& t = v.as_tensor();
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel());
}

TEST(Sequences, TypesPrintAndParseBack) {
  Module m = parse_module(
      R"(fn @main(%s: seq<f32[?, 3]>, %u: seq<i64>, %o: opt<seq<f32[2]>>, %e: seq<f32, empty>) {
  return (%s, %u, %o, %e)
})");
  const auto& params = m.functions[0]->params;
  EXPECT_EQ(to_string(params[0].type()), "seq<f32[?, 3]>");
  EXPECT_EQ(to_string(params[1].type()), "seq<i64>");
  EXPECT_EQ(to_string(params[2].type()), "opt<seq<f32[2]>>");
  EXPECT_EQ(to_string(params[3].type()), "seq<f32, empty>");
  // A sequence's non-constant dims are Any: its elements may differ in shape.
  arith::Var n("n");
  EXPECT_EQ(to_string(sequence_type(vm::DType::kFloat32,
                                    tensor_type(vm::DType::kFloat32, {Dim(n), Dim(4)}))),
            "seq<f32[?, 4]>");
}

// A loop that grows a sequence of run-time length: element i is x[0:i+1] + i (shapes [1],
// [2], [3], ...), then reads its length, element -1 (from the end) and erases element 0.
TEST(Sequences, LoopBuildsElementsOfGrowingShapeReadBackAtRunTime) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%x: f32[5], %n: i64[]) {
  %empty = SequenceEmpty() {dtype=1}
  %l = loop(max_trip=%n, cond=none, %empty) scan_outputs=0 fn(%i: i64[], %go: bool[], %s: seq<f32>) {
    %end = Add(%i, const(i64[], [1]))
    %ends = Unsqueeze(%end, const(i64[1], [0]))
    %part = Slice(%x, const(i64[1], [0]), %ends)
    %shift = Cast(%i) {to=1}
    %elem = Add(%part, %shift)
    %next = SequenceInsert(%s, %elem)
    return (%go, %next)
  }
  %seq = %l.0
  %len = SequenceLength(%seq)
  %last = SequenceAt(%seq, const(i64[], [-1]))
  %doubled = Add(%last, %last)
  %rest = SequenceErase(%seq, const(i64[], [0]))
  %first_rest = SequenceAt(%rest, const(i64[], [0]))
  return (%seq, %len, %doubled, %first_rest)
})");
  std::vector<vm::Value> in{f32s({10, 20, 30, 40, 50}), i64_scalar(3)};
  std::vector<vm::Value> out = m.run(in);
  ASSERT_EQ(out.size(), 4u);
  const vm::Tuple& seq = out[0].as_tuple();
  ASSERT_EQ(seq.size(), 3u);
  EXPECT_EQ(floats(seq[0]), (std::vector<float>{10}));
  EXPECT_EQ(floats(seq[1]), (std::vector<float>{11, 21}));
  EXPECT_EQ(floats(seq[2]), (std::vector<float>{12, 22, 32}));
  EXPECT_EQ(out[1].as_tensor().data_as<int64_t>()[0], 3);
  EXPECT_EQ(floats(out[2]), (std::vector<float>{24, 44, 64}));
  EXPECT_EQ(floats(out[3]), (std::vector<float>{11, 21}));
  // No iterations: reading element -1 of an empty sequence fails naming the node.
  std::vector<vm::Value> none{f32s({10, 20, 30, 40, 50}), i64_scalar(0)};
  EXPECT_USER_ERROR(m.run(none), "%last = SequenceAt: the position is outside the sequence");
}

TEST(Sequences, InsertAtAPositionAndConstruct) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%a: f32[2], %b: f32[3], %p: i64[]) {
  %s = SequenceConstruct(%a, %a)
  %t = SequenceInsert(%s, %b, %p)
  return %t
})");
  std::vector<vm::Value> in{f32s({1, 2}), f32s({7, 8, 9}), i64_scalar(-1)};
  std::vector<vm::Value> out = m.run(in);
  ASSERT_EQ(out.size(), 1u);  // one output: the sequence
  const vm::Tuple& t = out[0].as_tuple();
  ASSERT_EQ(t.size(), 3u);  // -1: before the last element
  EXPECT_EQ(floats(t[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(floats(t[1]), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(floats(t[2]), (std::vector<float>{1, 2}));
  std::vector<vm::Value> far{f32s({1, 2}), f32s({7, 8, 9}), i64_scalar(3)};
  EXPECT_USER_ERROR(m.run(far), "%t = SequenceInsert: the position is outside the sequence");
}

TEST(Optionals, HasAndGetElementOfEmptyAndFull) {
  vm::VirtualMachine m = machine_for(R"(fn @main(%o: opt<f32[2]>) {
  %has = OptionalHasElement(%o)
  %x = OptionalGetElement(%o)
  return (%has, %x)
})");
  std::vector<vm::Value> full{vm::Value(vm::Tuple{f32s({3, 4})})};
  std::vector<vm::Value> out = m.run(full);
  EXPECT_EQ(out[0].as_tensor().data_as<uint8_t>()[0], 1);
  EXPECT_EQ(floats(out[1]), (std::vector<float>{3, 4}));
  std::vector<vm::Value> empty{vm::Value(vm::Tuple{})};
  EXPECT_USER_ERROR(m.run(empty), "%x = OptionalGetElement: the optional is empty");
  // The signature checks what an optional holds.
  std::vector<vm::Value> wrong{vm::Value(vm::Tuple{f32s({1, 2, 3})})};
  EXPECT_USER_ERROR(m.run(wrong), "input 'o' dim 0 must be 2");
}

}  // namespace
}  // namespace dynvm::compiler
