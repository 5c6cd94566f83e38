// Kernel calls into a real loaded library (kernels/test_kernels.c, embedded in the
// executable by fixtures/kernels.vmasm): values against a plain loop, dispatch to the
// variant whose conditions hold, failing kernels, and libraries that cannot load.
#include <gtest/gtest.h>

#include "tests/vm/vm_test_util.h"
#include "vm/executor.h"

namespace dynvm::vm {
namespace {

using testing::f32_tensor;
using testing::f32_values;
using testing::function_index;

class KernelCallTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { program_ = testing::load_fixture("kernels.vmasm"); }
  static void TearDownTestSuite() { program_.reset(); }
  static std::shared_ptr<const Program> program_;
};
std::shared_ptr<const Program> KernelCallTest::program_;

std::vector<float> ramp(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

// Runs main(x, y) on `vm` and checks z == x + y against a plain loop.
void expect_sum(VirtualMachine& vm, size_t n) {
  std::vector<float> x = ramp(n, 0.5f, 1.25f);
  std::vector<float> y = ramp(n, -3.0f, 0.75f);
  std::vector<Value> inputs{f32_tensor(x), f32_tensor(y)};
  std::vector<Value> out = vm.run(inputs);
  ASSERT_EQ(out.size(), 1u);
  const Tensor& z = out[0].as_tensor();
  ASSERT_EQ(z.shape(), (Shape{static_cast<int64_t>(n)}));
  std::vector<float> got = f32_values(z);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] + y[i]) << "n = " << n << ", i = " << i;
}

TEST_F(KernelCallTest, AddMatchesAPlainLoop) {
  VirtualMachine vm(program_);
  for (size_t n : {1, 3, 4, 5, 64, 1000, 4096, 4097, 10000}) expect_sum(vm, n);
}

TEST_F(KernelCallTest, DispatchPicksTheVariantWhoseConditionsHold) {
  VirtualMachine vm(program_);
  size_t add = 0;  // kernel 0: add_f32_v4 when n % 4 == 0 and 4 <= n <= 4096, else add_f32
  ASSERT_EQ(program_->exe().kernels[add].name, "add");
  EXPECT_EQ(vm.last_variant(add), -1);
  struct Case {
    size_t n;
    int64_t variant;
  };
  for (Case c :
       {Case{8, 0}, Case{7, 1}, Case{4096, 0}, Case{4100, 1}, Case{1, 1}, Case{4, 0}, Case{2, 1}}) {
    expect_sum(vm, c.n);
    EXPECT_EQ(vm.last_variant(add), c.variant) << "n = " << c.n;
  }
}

TEST_F(KernelCallTest, SameShapeSameVariantEveryTime) {
  VirtualMachine vm(program_);
  for (int round = 0; round < 20; ++round) {
    expect_sum(vm, 16);
    EXPECT_EQ(vm.last_variant(0), 0);
    expect_sum(vm, 15);
    EXPECT_EQ(vm.last_variant(0), 1);
    expect_sum(vm, 16);
    EXPECT_EQ(vm.last_variant(0), 0);
  }
}

TEST_F(KernelCallTest, NoMatchingVariantIsAnError) {
  VirtualMachine vm(program_);
  size_t fn = function_index(*program_, "add_v4_only");
  std::vector<Value> ok{f32_tensor(ramp(8, 1, 1)), f32_tensor(ramp(8, 2, 0))};
  EXPECT_EQ(f32_values(vm.invoke(fn, ok).as_tensor())[7], 10.0f);
  std::vector<Value> bad{f32_tensor(ramp(6, 1, 1)), f32_tensor(ramp(6, 2, 0))};
  EXPECT_USER_ERROR(vm.invoke(fn, bad), "no variant of kernel add_v4_only accepts");
}

TEST_F(KernelCallTest, FailingKernelReportsItsMessage) {
  VirtualMachine vm(program_);
  std::vector<Value> args{f32_tensor({1, 2})};
  EXPECT_USER_ERROR(
      vm.invoke(function_index(*program_, "call_failing"), args),
      "kernel always_fails (fail_kernel) failed: fail_kernel: this kernel always fails");
  // The error is per call: a successful kernel call afterwards reports nothing.
  expect_sum(vm, 12);
}

TEST_F(KernelCallTest, KernelArgumentsMustBeTensors) {
  VirtualMachine vm(program_);
  std::vector<Value> args{int64_t{5}};
  EXPECT_USER_ERROR(vm.invoke(function_index(*program_, "call_failing"), args),
                    "kernel argument 0 (register r0) must be a tensor, found an integer");
}

TEST_F(KernelCallTest, EmptyKernelLeavesItsOutputAlone) {
  VirtualMachine vm(program_);
  Tensor t = f32_tensor({1, 2, 3});
  std::vector<Value> args{t};
  Value out = vm.invoke(function_index(*program_, "call_empty"), args);
  EXPECT_EQ(out.as_tensor().data(), t.data());
  EXPECT_EQ(f32_values(out.as_tensor()), (std::vector<float>{1, 2, 3}));
  // A kernel with one unconditional variant needs no dispatch: variant 0.
  EXPECT_EQ(vm.last_variant(3), 0);
}

TEST_F(KernelCallTest, InputsAreCheckedAgainstTheSignature) {
  VirtualMachine vm(program_);
  std::vector<Value> mismatched{f32_tensor({1, 2}), f32_tensor({1, 2, 3})};
  EXPECT_USER_ERROR(vm.run(mismatched), "dim 'n' is 2");
  std::vector<Value> one{f32_tensor({1, 2})};
  EXPECT_USER_ERROR(vm.run(one), "takes 2 inputs (x, y) but 1 was given");
}

// Loading, with no other program alive (see SecondProgramGetsItsOwnLibrary for why).
TEST(KernelLibraryLoad, GarbageLibraryIsRejectedAtLoad) {
  Executable exe = testing::assemble_fixture("kernels.vmasm");
  exe.libraries[0].bytes = std::vector<uint8_t>(4096, 0xab);
  EXPECT_USER_ERROR(Program::load(exe), "cannot load kernel library dynvm-kernels-0");
  exe.libraries[0].bytes.clear();
  EXPECT_USER_ERROR(Program::load(exe), "cannot load kernel library");
  // An ELF header followed by garbage.
  exe.libraries[0].bytes = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  exe.libraries[0].bytes.resize(200, 0x5a);
  EXPECT_USER_ERROR(Program::load(exe), "cannot load kernel library");
}

TEST(KernelLibraryLoad, MissingKernelSymbolIsRejectedAtLoad) {
  Executable exe = testing::assemble_fixture("kernels.vmasm");
  exe.kernels[0].variants[1].symbol = "no_such_kernel";
  EXPECT_USER_ERROR(Program::load(exe), "has no kernel 'no_such_kernel'");
}

TEST(KernelLibraryLoad, LibraryThatIsNotADynvmLibraryIsRejected) {
  // A real shared object without the dynvm entry points.
  Executable exe = testing::assemble_fixture("kernels.vmasm");
  std::string libm = "/lib/x86_64-linux-gnu/libm.so.6";
  if (!std::filesystem::exists(libm)) GTEST_SKIP() << libm << " not found";
  std::string bytes = testing::read_file_text(libm);
  exe.libraries[0].bytes.assign(bytes.begin(), bytes.end());
  EXPECT_USER_ERROR(Program::load(exe), "is not a dynvm kernel library");
}

// Regression: a library is opened by dlopen("/proc/self/fd/N") of a memfd. glibc
// returns an already loaded object whose name matches, so when N is reused while an
// earlier program's library is still loaded, the second program silently gets the
// first program's library instead of its own bytes.
TEST(KernelLibraryLoad, SecondProgramGetsItsOwnLibrary) {
  auto first = testing::load_fixture("kernels.vmasm");
  Executable exe = testing::assemble_fixture("kernels.vmasm");
  exe.libraries[0].bytes = std::vector<uint8_t>(4096, 0xab);
  EXPECT_USER_ERROR(Program::load(exe), "cannot load kernel library");
}

TEST_F(KernelCallTest, EachProgramLoadsItsOwnCopyOfTheLibrary) {
  // Two programs from the same bytes run side by side and unload independently.
  auto second = testing::load_fixture("kernels.vmasm");
  VirtualMachine a(program_);
  {
    VirtualMachine b(second);
    expect_sum(b, 9);
  }
  second.reset();
  expect_sum(a, 9);
}

}  // namespace
}  // namespace dynvm::vm
