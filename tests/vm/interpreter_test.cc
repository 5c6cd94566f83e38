// The interpreter on .vmasm programs (fixtures/programs.vmasm): recursion, loops,
// tuples, storage and views, integer arithmetic, and every way a run can fail -- each
// failure a UserError with a useful message, never a crash.
#include <gtest/gtest.h>

#include "tests/vm/vm_test_util.h"
#include "vm/executor.h"

namespace dynvm::vm {
namespace {

using testing::call;
using testing::load_fixture;

class InterpreterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { program_ = load_fixture("programs.vmasm"); }
  static void TearDownTestSuite() { program_.reset(); }
  static std::shared_ptr<const Program> program_;
};
std::shared_ptr<const Program> InterpreterTest::program_;

int64_t call_int(const std::shared_ptr<const Program>& p, std::string_view fn,
                 std::vector<Value> args) {
  return call(p, fn, std::move(args)).as_int();
}

TEST_F(InterpreterTest, RecursiveFactorial) {
  EXPECT_EQ(call_int(program_, "fact", {int64_t{0}}), 1);
  EXPECT_EQ(call_int(program_, "fact", {int64_t{1}}), 1);
  EXPECT_EQ(call_int(program_, "fact", {int64_t{5}}), 120);
  EXPECT_EQ(call_int(program_, "fact", {int64_t{10}}), 3628800);
  EXPECT_EQ(call_int(program_, "fact", {int64_t{20}}), 2432902008176640000);
}

TEST_F(InterpreterTest, FactorialOverflowIsAnError) {
  EXPECT_USER_ERROR(call(program_, "fact", {int64_t{21}}), "integer overflow in mul");
}

TEST_F(InterpreterTest, RecursiveFibonacci) {
  const int64_t expected[] = {0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55};
  for (int64_t n = 0; n <= 10; ++n) EXPECT_EQ(call_int(program_, "fib", {n}), expected[n]);
  EXPECT_EQ(call_int(program_, "fib", {int64_t{20}}), 6765);
}

TEST_F(InterpreterTest, LoopWithGoto) {
  EXPECT_EQ(call_int(program_, "sum_to", {int64_t{0}}), 0);
  EXPECT_EQ(call_int(program_, "sum_to", {int64_t{1}}), 1);
  EXPECT_EQ(call_int(program_, "sum_to", {int64_t{1000}}), 500500);
}

TEST_F(InterpreterTest, EntryRunsThroughTheExecutor) {
  SyncExecutor executor(program_);
  std::vector<Value> out = executor.run({});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].as_int(), 3628800);
}

TEST_F(InterpreterTest, OneVmRunsManyCalls) {
  // Frames and registers are reused from call to call; results must not leak between.
  VirtualMachine vm(program_);
  size_t fact = testing::function_index(*program_, "fact");
  size_t fib = testing::function_index(*program_, "fib");
  for (int64_t n = 0; n < 15; ++n) {
    std::vector<Value> args{n};
    EXPECT_EQ(vm.invoke(fib, args).as_int(), n < 2 ? n : call_int(program_, "fib", {n}));
    int64_t f = 1;
    for (int64_t i = 2; i <= n; ++i) f *= i;
    EXPECT_EQ(vm.invoke(fact, args).as_int(), f);
  }
}

TEST_F(InterpreterTest, Tuples) {
  Value v = call(program_, "tuples", {int64_t{3}, int64_t{4}});
  const Tuple& t = v.as_tuple();
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].as_int(), 4);
  EXPECT_EQ(t[1].as_int(), 3);
  const Tuple& inner = t[2].as_tuple();
  ASSERT_EQ(inner.size(), 2u);
  EXPECT_EQ(inner[0].as_int(), 3);
  EXPECT_EQ(inner[1].as_int(), 4);
  EXPECT_TRUE(t[3].as_tuple().empty());
}

TEST_F(InterpreterTest, GetFieldOutOfRangeIsAnError) {
  EXPECT_USER_ERROR(call(program_, "bad_field"), "field 1 of a tuple of 1");
}

TEST_F(InterpreterTest, StorageTensorsAndViews) {
  Value v = call(program_, "views");
  const Tuple& t = v.as_tuple();
  ASSERT_EQ(t.size(), 6u);
  const Tensor& whole = t[0].as_tensor();
  const Tensor& view = t[1].as_tensor();
  const Tensor& tail = t[2].as_tensor();
  EXPECT_EQ(whole.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(whole.dtype(), DType::kFloat32);
  EXPECT_EQ(view.shape(), (Shape{6, 4}));
  EXPECT_EQ(tail.shape(), (Shape{12}));
  EXPECT_EQ(t[3].as_shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t[4].as_int(), 4);
  EXPECT_EQ(t[5].as_int(), 3);
  // One storage (freed from its register, kept alive by the tensors) under all three.
  EXPECT_EQ(whole.storage(), view.storage());
  EXPECT_EQ(whole.storage(), tail.storage());
  EXPECT_EQ(whole.storage()->nbytes(), 96u);
  EXPECT_EQ(whole.data(), view.data());
  EXPECT_EQ(static_cast<char*>(tail.data()), static_cast<char*>(whole.data()) + 48);
  // Writing through the view is seen through the tensor: they share memory.
  view.data_as<float>()[23] = 7.5f;
  EXPECT_EQ(whole.data_as<float>()[23], 7.5f);
  EXPECT_EQ(tail.data_as<float>()[11], 7.5f);
}

TEST_F(InterpreterTest, ShapeTensorMakesInt64HostTensors) {
  Value v = call(program_, "shape_tensors", {int64_t{7}, int64_t{-3}});
  const Tuple& t = v.as_tuple();
  const Tensor& vec = t[0].as_tensor();
  EXPECT_EQ(vec.dtype(), DType::kInt64);
  EXPECT_EQ(vec.shape(), (Shape{2}));
  EXPECT_EQ(vec.data_as<int64_t>()[0], 7);
  EXPECT_EQ(vec.data_as<int64_t>()[1], -3);
  EXPECT_EQ(t[1].as_tensor().shape(), (Shape{}));
  EXPECT_EQ(t[1].as_tensor().dtype(), DType::kInt32);
  EXPECT_EQ(t[2].as_int(), 7);
  EXPECT_USER_ERROR(call(program_, "bad_shape_tensor", {int64_t{1}, int64_t{2}}),
                    "shape_tensor: a scalar needs one element, got 2");
}

TEST_F(InterpreterTest, TupleAppendAndTupleGetCollectValues) {
  Value v = call(program_, "collect", {int64_t{5}});
  const Tuple& t = v.as_tuple();
  const Tuple& items = t[0].as_tuple();
  ASSERT_EQ(items.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(items[static_cast<size_t>(i)].as_int(), i);
  EXPECT_EQ(t[1].as_int(), 4);
  EXPECT_USER_ERROR(call(program_, "collect", {int64_t{0}}), "tuple_get: index -1 of a tuple of 0");
}

TEST_F(InterpreterTest, TupleAppendLeavesACopyInAnotherRegisterAsItWas) {
  Value v = call(program_, "collect_snapshot", {int64_t{5}});
  const Tuple& t = v.as_tuple();
  const Tuple& all = t[0].as_tuple();
  const Tuple& snapshot = t[1].as_tuple();
  ASSERT_EQ(all.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(all[static_cast<size_t>(i)].as_int(), i);
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0].as_int(), 0);
  EXPECT_EQ(snapshot[1].as_int(), 1);
}

TEST_F(InterpreterTest, TensorThatDoesNotFitItsStorageIsAnError) {
  EXPECT_EQ(call(program_, "overflowing_tensor", {int64_t{0}}).as_tensor().shape(), (Shape{4}));
  EXPECT_USER_ERROR(call(program_, "overflowing_tensor", {int64_t{4}}),
                    "does not fit in a storage of 16 bytes");
  EXPECT_USER_ERROR(call(program_, "overflowing_tensor", {int64_t{-4}}), "does not fit");
}

TEST_F(InterpreterTest, ReshapeMustKeepTheElementCount) {
  EXPECT_EQ(call(program_, "bad_reshape", {int64_t{6}}).as_tensor().shape(), (Shape{6}));
  EXPECT_USER_ERROR(call(program_, "bad_reshape", {int64_t{5}}), "cannot reshape [2, 3]");
}

TEST_F(InterpreterTest, RowViewIsARowOfTheSameStorageCountingNegativesFromTheEnd) {
  Tensor x = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
                                 {3, 2, 2}, DType::kFloat32);
  for (int64_t i : {0, 1, 2, -1, -3}) {
    Tensor row = call(program_, "row_of", {x, i}).as_tensor();
    const int64_t r = i < 0 ? i + 3 : i;
    ASSERT_EQ(row.shape(), (Shape{2, 2}));
    EXPECT_EQ(row.data(), x.data_as<float>() + 4 * r) << "row " << i << " is not a view";
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(row.data_as<float>()[k], static_cast<float>(4 * r + k));
  }
  EXPECT_USER_ERROR(call(program_, "row_of", {x, int64_t{3}}),
                    "index 3 is out of range for axis 0");
  EXPECT_USER_ERROR(call(program_, "row_of", {x, int64_t{-4}}), "index -4 is out of range");
  Tensor scalar = Tensor::from_vector(std::vector<float>{1}, {}, DType::kFloat32);
  EXPECT_USER_ERROR(call(program_, "row_of", {scalar, int64_t{0}}), "row_view of a scalar");
}

std::vector<int64_t> intops(const std::shared_ptr<const Program>& p, int64_t a, int64_t b) {
  Value v = call(p, "intops", {a, b});
  std::vector<int64_t> out;
  for (const Value& x : v.as_tuple()) out.push_back(x.as_int());
  return out;
}

TEST_F(InterpreterTest, IntegerOpsFloorOnNegatives) {
  //                 div mod min max eq ne lt le gt ge
  EXPECT_EQ(intops(program_, 7, 2), (std::vector<int64_t>{3, 1, 2, 7, 0, 1, 0, 0, 1, 1}));
  EXPECT_EQ(intops(program_, -7, 2), (std::vector<int64_t>{-4, 1, -7, 2, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(intops(program_, 7, -2), (std::vector<int64_t>{-4, -1, -2, 7, 0, 1, 0, 0, 1, 1}));
  EXPECT_EQ(intops(program_, -7, -2), (std::vector<int64_t>{3, -1, -7, -2, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(intops(program_, -8, 2), (std::vector<int64_t>{-4, 0, -8, 2, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(intops(program_, 5, 5), (std::vector<int64_t>{1, 0, 5, 5, 1, 0, 0, 1, 0, 1}));
  int64_t min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(call_int(program_, "modulo", {min, int64_t{-1}}), 0);
  EXPECT_EQ(call_int(program_, "divide", {min, int64_t{1}}), min);
}

TEST_F(InterpreterTest, DivisionByZeroIsAnError) {
  EXPECT_USER_ERROR(call(program_, "divide", {int64_t{1}, int64_t{0}}), "division by zero");
  EXPECT_USER_ERROR(call(program_, "modulo", {int64_t{1}, int64_t{0}}), "modulo by zero");
  EXPECT_USER_ERROR(call(program_, "divide", {std::numeric_limits<int64_t>::min(), int64_t{-1}}),
                    "integer overflow in div");
}

TEST_F(InterpreterTest, FailingAssertCarriesTheProgramsMessage) {
  EXPECT_EQ(call_int(program_, "check_positive", {int64_t{3}}), 3);
  EXPECT_USER_ERROR(call(program_, "check_positive", {int64_t{0}}),
                    "assertion failed: n must be positive");
  // The VM says where it failed.
  EXPECT_USER_ERROR(call(program_, "check_positive", {int64_t{-1}}), "in check_positive at pc 2");
}

TEST_F(InterpreterTest, FatalCarriesTheProgramsMessage) {
  EXPECT_USER_ERROR(call(program_, "always_fatal"), "unreachable: always_fatal was called");
}

TEST_F(InterpreterTest, DeepRecursionBelowTheLimitWorks) {
  EXPECT_EQ(call_int(program_, "depth", {int64_t{kMaxCallDepth - 2}}),
            static_cast<int64_t>(kMaxCallDepth - 2));
}

TEST_F(InterpreterTest, UnboundedRecursionIsAnErrorNotACrash) {
  EXPECT_USER_ERROR(call(program_, "forever", {int64_t{1}}), "call depth exceeded");
  EXPECT_USER_ERROR(call(program_, "depth", {int64_t{kMaxCallDepth + 5}}), "call depth exceeded");
  // The same VM is usable afterwards.
  VirtualMachine vm(program_);
  std::vector<Value> args{int64_t{1}};
  EXPECT_USER_ERROR(vm.invoke(testing::function_index(*program_, "forever"), args),
                    "call depth exceeded");
  std::vector<Value> ten{int64_t{10}};
  EXPECT_EQ(vm.invoke(testing::function_index(*program_, "fact"), ten).as_int(), 3628800);
}

TEST_F(InterpreterTest, WrongValueKindIsAnError) {
  EXPECT_USER_ERROR(call(program_, "wrong_kind", {int64_t{1}}),
                    "expected a tensor but found an integer");
}

TEST_F(InterpreterTest, InvokeChecksArgumentCount) {
  VirtualMachine vm(program_);
  std::vector<Value> none;
  EXPECT_USER_ERROR(vm.invoke(testing::function_index(*program_, "fact"), none),
                    "takes 1 arguments, got 0");
  EXPECT_USER_ERROR(vm.invoke(1000, none), "no function 1000");
}

}  // namespace
}  // namespace dynvm::vm
