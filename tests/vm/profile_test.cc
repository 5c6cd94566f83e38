// The profiler (vm/profile.h): exact call counts per kernel on the VM and through both
// executors (profiles of pooled VMs merged across threads), kernel time never above run
// time, nothing measured while off, and the report's layout and order.
#include "vm/profile.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "tests/vm/vm_test_util.h"
#include "vm/executor.h"

namespace dynvm::vm {
namespace {

using testing::f32_tensor;
using testing::f32_values;
using testing::function_index;

// fixtures/kernels.vmasm's kernel table.
constexpr size_t kAdd = 0, kAddV4Only = 1, kAlwaysFails = 2, kNothing = 3;

// kernels.vmasm with add_twice (two calls of add, one of nothing) as its entry.
std::shared_ptr<const Program> add_twice_program() {
  Executable exe = testing::assemble_fixture("kernels.vmasm");
  exe.entry = static_cast<uint32_t>(exe.find_function("add_twice"));
  return Program::load(std::move(exe));
}

std::vector<Value> inputs(size_t n) {
  std::vector<float> x(n), y(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 0.25f * static_cast<float>(i) - 1;
  }
  return {f32_tensor(x), f32_tensor(y)};
}

void expect_calls(const Profile& p, int64_t runs) {
  ASSERT_EQ(p.kernels.size(), 4u);
  EXPECT_EQ(p.runs, runs);
  EXPECT_EQ(p.kernels[kAdd].calls, 2 * runs);
  EXPECT_EQ(p.kernels[kNothing].calls, runs);
  EXPECT_EQ(p.kernels[kAddV4Only].calls, 0);
  EXPECT_EQ(p.kernels[kAlwaysFails].calls, 0);
  EXPECT_EQ(p.kernels[kAddV4Only].total_ns, 0);
  EXPECT_GT(p.kernels[kAdd].total_ns, 0);
  EXPECT_LE(p.kernel_ns(), p.run_ns);
}

TEST(Profile, VmCountsCallsPerKernelExactly) {
  auto program = add_twice_program();
  VirtualMachine vm(program);
  vm.set_profiling(true);
  std::vector<Value> in = inputs(100);
  std::vector<Value> out = vm.run(in);
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> z = f32_values(out[0].as_tensor());
  std::vector<float> x = f32_values(in[0].as_tensor()), y = f32_values(in[1].as_tensor());
  for (size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z[i], (x[i] + y[i]) + y[i]) << i;
  expect_calls(vm.profile(), 1);

  for (int i = 0; i < 6; ++i) vm.run(in);
  expect_calls(vm.profile(), 7);
  EXPECT_EQ(vm.profile().kernel_ns(),
            vm.profile().kernels[kAdd].total_ns + vm.profile().kernels[kNothing].total_ns);
}

TEST(Profile, CallsAreSplitByTheirArgumentShapes) {
  // What vmtune tunes each kernel at: the shapes it was called with, and the time there.
  auto program = add_twice_program();
  VirtualMachine vm(program);
  vm.set_profiling(true);
  for (int i = 0; i < 3; ++i) vm.run(inputs(100));
  vm.run(inputs(7));
  const KernelTime& add = vm.profile().kernels[kAdd];
  ASSERT_EQ(add.by_shape.size(), 2u);
  // add(x, y) -> out: three arguments of one shape each.
  const ArgShapes big{{100}, {100}, {100}}, small{{7}, {7}, {7}};
  ASSERT_EQ(add.by_shape.count(big), 1u);
  EXPECT_EQ(add.by_shape.at(big).calls, 6);
  EXPECT_EQ(add.by_shape.at(small).calls, 2);
  EXPECT_EQ(add.by_shape.at(big).total_ns + add.by_shape.at(small).total_ns, add.total_ns);
  Profile merged;
  merged.merge(vm.profile());
  merged.merge(vm.profile());
  EXPECT_EQ(merged.kernels[kAdd].by_shape.at(small).calls, 4);
}

TEST(Profile, OffByDefaultAndOffMeansNothingMeasured) {
  auto program = add_twice_program();
  VirtualMachine vm(program);
  EXPECT_FALSE(vm.profiling());
  vm.run(inputs(8));
  EXPECT_EQ(vm.profile().runs, 0);
  EXPECT_EQ(vm.profile().kernel_ns(), 0);

  vm.set_profiling(true);
  vm.run(inputs(8));
  vm.set_profiling(false);  // keeps what was measured, adds nothing more
  vm.run(inputs(8));
  expect_calls(vm.profile(), 1);

  vm.reset_profile();
  EXPECT_EQ(vm.profile().runs, 0);
  EXPECT_EQ(vm.profile().run_ns, 0);
}

TEST(Profile, FailedRunCountsAsARun) {
  auto program = testing::load_fixture("kernels.vmasm");
  VirtualMachine vm(program);
  vm.set_profiling(true);
  std::vector<Value> args{f32_tensor({1, 2})};
  EXPECT_USER_ERROR(vm.invoke(function_index(*program, "call_failing"), args),
                    "fail_kernel: this kernel always fails");
  EXPECT_EQ(vm.profile().runs, 1);
  EXPECT_LE(vm.profile().kernel_ns(), vm.profile().run_ns);
  // The VM is usable and keeps counting.
  vm.invoke(function_index(*program, "add_twice"), inputs(5));
  EXPECT_EQ(vm.profile().runs, 2);
  EXPECT_EQ(vm.profile().kernels[kAdd].calls, 2);
}

TEST(Profile, SyncExecutorProfilesOnlyWhileOn) {
  SyncExecutor executor(add_twice_program());
  std::vector<Value> in = inputs(64);
  executor.run(in);  // a warm-up, not profiled
  EXPECT_EQ(executor.profile().runs, 0);
  executor.set_profiling(true);
  for (int i = 0; i < 5; ++i) executor.run(in);
  expect_calls(executor.profile(), 5);
  executor.reset_profile();
  executor.run(in);
  expect_calls(executor.profile(), 1);
}

TEST(Profile, TbbExecutorMergesTheProfilesOfItsPooledVms) {
  TbbExecutor executor(add_twice_program(), 2);
  executor.set_profiling(true);
  constexpr int kThreads = 4, kRuns = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&executor, t] {
      for (int i = 0; i < kRuns; ++i) executor.run(inputs(static_cast<size_t>(1 + t * 100 + i)));
    });
  }
  for (std::thread& t : threads) t.join();
  expect_calls(executor.profile(), kThreads * kRuns);
}

TEST(Profile, MergeAddsCountsAndTimes) {
  Profile a;
  a.kernels = {{1, 10}, {2, 20}};
  a.runs = 1;
  a.run_ns = 100;
  Profile b;
  b.kernels = {{3, 30}, {0, 0}, {4, 40}};
  b.runs = 2;
  b.run_ns = 200;
  a.merge(b);
  ASSERT_EQ(a.kernels.size(), 3u);
  EXPECT_EQ(a.kernels[0].calls, 4);
  EXPECT_EQ(a.kernels[0].total_ns, 40);
  EXPECT_EQ(a.kernels[1].calls, 2);
  EXPECT_EQ(a.kernels[2].calls, 4);
  EXPECT_EQ(a.kernels[2].total_ns, 40);
  EXPECT_EQ(a.runs, 3);
  EXPECT_EQ(a.run_ns, 300);
  EXPECT_EQ(a.kernel_ns(), 100);
}

TEST(Profile, ReportListsCalledKernelsByTotalTimeThenOutsideKernels) {
  Executable exe = testing::assemble_fixture("kernels.vmasm");
  Profile p;
  p.kernels.resize(exe.kernels.size());
  p.kernels[kAdd] = {4, 3'000'000};
  p.kernels[kNothing] = {2, 5'000'000};
  p.runs = 2;
  p.run_ns = 10'000'000;
  std::ostringstream os;
  p.report(os, exe);
  EXPECT_EQ(os.str(),
            "profile over 2 runs: 10.000 ms in the VM\n"
            "kernel               calls     total ms      mean us  % of run\n"
            "nothing                  2        5.000     2500.000      50.0\n"
            "add                      4        3.000      750.000      30.0\n"
            "outside kernels                   2.000                   20.0\n");
}

}  // namespace
}  // namespace dynvm::vm
