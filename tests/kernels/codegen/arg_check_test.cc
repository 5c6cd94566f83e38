// A generated kernel trusts nothing about its arguments: count, rank, dtype, constant dims,
// symbolic dims bound from their first occurrence and checked everywhere else, compound
// dims. Each mismatch makes the kernel return non-zero with a message that reaches the
// caller as a vm::UserError through the VM.
#include "tests/kernels/codegen/codegen_test_util.h"

namespace dynvm::codegen::testing {
namespace {

using tir::Expr;
using vm::DType;
using vm::Tensor;

// B[i, j] = A[i, j] + 1 over a fixed [4, 3] shape.
tir::LoweredFunc fixed_kernel() {
  BufferRef A = buffer("A", DType::kFloat32, {4, 3});
  BufferRef B = buffer("B", DType::kFloat32, {4, 3});
  Var i("i");
  return kernel("fixed", {A, B}, 1,
                serial(i, 0, 12, store(B, i, load(A, i) + tir::make_const(tir::f32(), 1))));
}

// y[r] = sum_j A[r, j] * x[j]: k appears in A (dim 1) and x (dim 0).
tir::LoweredFunc matvec_kernel() {
  Var m("m"), k("k"), r("r"), j("j");
  BufferRef A = buffer("A", DType::kFloat32, {m, k});
  BufferRef x = buffer("x", DType::kFloat32, {k});
  BufferRef y = buffer("y", DType::kFloat32, {m});
  tir::Stmt body =
      tir::make_seq({store(y, r, tir::make_const(tir::f32(), 0)),
                     serial(j, 0, k, store(y, r, load(y, r) + load(A, r * k + j) * load(x, j)))});
  return kernel("matvec", {A, x, y}, 2, serial(r, 0, m, body));
}

// Y has n * 2 elements: a compound dim, checked against the n bound from X.
tir::LoweredFunc twice_kernel() {
  Var n("n"), i("i");
  BufferRef X = buffer("X", DType::kFloat32, {n});
  BufferRef Y = buffer("Y", DType::kFloat32, {n * 2});
  return kernel("twice", {X, Y}, 1,
                serial(i, 0, n * 2, store(Y, i, load(X, arith::floordiv(i, 2)))));
}

std::vector<tir::LoweredFunc> all_kernels() {
  return {binary_kernel("add", DType::kFloat32, DType::kFloat32, 1,
                        [](const Expr& a, const Expr& b) { return a + b; }),
          fixed_kernel(), matvec_kernel(), twice_kernel()};
}

class ArgCheckTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    funcs_ = new std::vector<tir::LoweredFunc>(all_kernels());
    lib_ = new vm::KernelLibrary(build(*funcs_));
    program_ = load_program(*lib_, *funcs_);
  }
  static void TearDownTestSuite() {
    program_.reset();
    delete lib_;
    delete funcs_;
  }
  static std::vector<tir::LoweredFunc>* funcs_;
  static vm::KernelLibrary* lib_;
  static std::shared_ptr<const vm::Program> program_;
};
std::vector<tir::LoweredFunc>* ArgCheckTest::funcs_ = nullptr;
vm::KernelLibrary* ArgCheckTest::lib_ = nullptr;
std::shared_ptr<const vm::Program> ArgCheckTest::program_;

Tensor f32(std::vector<float> v, vm::Shape shape = {}) { return tensor(v, DType::kFloat32, shape); }

TEST_F(ArgCheckTest, WrongRankIsReported) {
  vm::VirtualMachine vm(program_);
  EXPECT_USER_ERROR(call(vm, "add", {f32({1, 2, 3, 4}, {2, 2}), f32({1, 2}), f32({0, 0})}),
                    "kernel add (add) failed: add: argument 0 (A) has rank 2, expected 1");
}

TEST_F(ArgCheckTest, WrongDtypeIsReported) {
  vm::VirtualMachine vm(program_);
  EXPECT_USER_ERROR(
      call(vm, "add",
           {f32({1, 2}), tensor(std::vector<int32_t>{1, 2}, DType::kInt32), f32({0, 0})}),
      "add: argument 1 (B) has the wrong dtype, expected f32");
}

TEST_F(ArgCheckTest, MismatchedSymbolicDimsAreReported) {
  vm::VirtualMachine vm(program_);
  EXPECT_USER_ERROR(
      call(vm, "add",
           {f32({1, 2, 3, 4, 5}), f32({1, 2, 3, 4, 5, 6, 7}), poisoned({5}, DType::kFloat32)}),
      "add: argument 1 (B) dim 0 is 7, expected 5 (n, from argument 0 dim 0)");
  EXPECT_USER_ERROR(call(vm, "add", {f32({1, 2}), f32({1, 2}), poisoned({3}, DType::kFloat32)}),
                    "add: argument 2 (C) dim 0 is 3, expected 2 (n, from argument 0 dim 0)");
  // k is bound from A's dim 1 and checked against x's dim 0.
  EXPECT_USER_ERROR(
      call(vm, "matvec",
           {f32(std::vector<float>(6, 1), {2, 3}), f32({1, 2}), poisoned({2}, DType::kFloat32)}),
      "matvec: argument 1 (x) dim 0 is 2, expected 3 (k, from argument 0 dim 1)");
}

TEST_F(ArgCheckTest, ConstantAndCompoundDimsAreChecked) {
  vm::VirtualMachine vm(program_);
  EXPECT_USER_ERROR(
      call(vm, "fixed",
           {f32(std::vector<float>(16, 1), {4, 4}), poisoned({4, 3}, DType::kFloat32)}),
      "fixed: argument 0 (A) dim 1 is 4, expected 3");
  EXPECT_USER_ERROR(call(vm, "twice", {f32({1, 2, 3}), poisoned({5}, DType::kFloat32)}),
                    "twice: argument 1 (Y) dim 0 is 5, expected 6 (");
}

TEST_F(ArgCheckTest, WrongArgumentCountIsReported) {
  // A kernel table entry that passes one argument too few.
  vm::Executable exe = executable_for(*lib_, *funcs_);
  exe.kernels[0].num_outputs = 0;
  size_t f = static_cast<size_t>(exe.find_function("add"));
  exe.functions[f].code[0].args.pop_back();
  exe.functions[f].num_params = 2;
  exe.functions[f].code[1].args = {1};
  vm::VirtualMachine vm(vm::Program::load(exe));
  EXPECT_USER_ERROR(vm.invoke(f, std::vector<vm::Value>{f32({1}), f32({2})}),
                    "add: got 2 arguments, expected 3");
}

TEST_F(ArgCheckTest, GoodCallsWorkAfterFailedOnes) {
  vm::VirtualMachine vm(program_);
  EXPECT_USER_ERROR(call(vm, "add", {f32({1, 2}), f32({1}), f32({0, 0})}), "dim 0 is 1");
  Tensor c = poisoned({2}, DType::kFloat32);
  call(vm, "add", {f32({1, 2}), f32({10, 20}), c});
  EXPECT_EQ(values<float>(c), (std::vector<float>{11, 22}));

  Tensor y = poisoned({2}, DType::kFloat32);
  call(vm, "matvec", {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f32({1, 0, -1}), y});
  EXPECT_EQ(values<float>(y), (std::vector<float>{-2, -2}));
  Tensor t = poisoned({6}, DType::kFloat32);
  call(vm, "twice", {f32({1, 2, 3}), t});
  EXPECT_EQ(values<float>(t), (std::vector<float>{1, 1, 2, 2, 3, 3}));
  Tensor b = poisoned({4, 3}, DType::kFloat32);
  call(vm, "fixed", {f32(std::vector<float>(12, 2), {4, 3}), b});
  EXPECT_EQ(values<float>(b), std::vector<float>(12, 3));
}

TEST_F(ArgCheckTest, EmptyTensorsAreFine) {
  vm::VirtualMachine vm(program_);
  Tensor c = vm::Tensor::empty({0}, DType::kFloat32);
  call(vm, "add",
       {vm::Tensor::empty({0}, DType::kFloat32), vm::Tensor::empty({0}, DType::kFloat32), c});
  Tensor y = poisoned({3}, DType::kFloat32);
  call(vm, "matvec",
       {vm::Tensor::empty({3, 0}, DType::kFloat32), vm::Tensor::empty({0}, DType::kFloat32), y});
  EXPECT_EQ(values<float>(y), (std::vector<float>{0, 0, 0}));
}

}  // namespace
}  // namespace dynvm::codegen::testing
