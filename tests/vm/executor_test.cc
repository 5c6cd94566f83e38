// The executors under concurrency: many threads run one shared Program (a kernel call
// with parallel loops plus integer work, fixtures/concurrent.vmasm) and every result is
// checked against values computed here; a failed run leaves the pooled VM usable.
#include "vm/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/vm/vm_test_util.h"

namespace dynvm::vm {
namespace {

using testing::f32_tensor;

// Lengths that exercise both add variants (n % 4 == 0 or not) and both sides of the
// parallel_for grain (one chunk, many).
constexpr size_t kLengths[] = {1, 2, 3, 4, 7, 8, 64, 100, 255, 256, 1000, 1024, 4097, 5000};

// Runs main(x, y) once for length n and checks (x + y, 1 + ... + n). Returns false (with
// a gtest failure) on a wrong value, so threads can stop early.
bool run_and_check(Executor& executor, size_t n, uint32_t seed) {
  std::vector<float> x(n), y(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((seed + i * 7) % 1000) * 0.5f;
    y[i] = static_cast<float>((seed * 3 + i) % 777) - 100.0f;
  }
  std::vector<Value> inputs{f32_tensor(x), f32_tensor(y)};
  std::vector<Value> out = executor.run(inputs);
  if (out.size() != 2) {
    ADD_FAILURE() << "expected 2 outputs, got " << out.size();
    return false;
  }
  const Tensor& z = out[0].as_tensor();
  if (z.numel() != static_cast<int64_t>(n)) {
    ADD_FAILURE() << "n = " << n << ": output has " << z.numel() << " elements";
    return false;
  }
  const float* zp = z.data_as<float>();
  for (size_t i = 0; i < n; ++i) {
    if (zp[i] != x[i] + y[i]) {
      ADD_FAILURE() << "n = " << n << ", i = " << i << ": " << zp[i] << " != " << x[i] + y[i];
      return false;
    }
  }
  int64_t expected_sum = static_cast<int64_t>(n) * static_cast<int64_t>(n + 1) / 2;
  if (out[1].as_int() != expected_sum) {
    ADD_FAILURE() << "n = " << n << ": sum " << out[1].as_int() << " != " << expected_sum;
    return false;
  }
  return true;
}

// `threads` threads each run `runs` requests on `executor`, with lengths varying per
// run; returns the number of runs that checked out.
int hammer(Executor& executor, int threads, int runs) {
  std::atomic<int> good{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int r = 0; r < runs; ++r) {
        size_t n = kLengths[(t * 5 + r) % std::size(kLengths)];
        if (!run_and_check(executor, n, static_cast<uint32_t>(t * 1000 + r))) return;
        good.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return good.load();
}

class ExecutorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { program_ = testing::load_fixture("concurrent.vmasm"); }
  static void TearDownTestSuite() { program_.reset(); }
  static std::shared_ptr<const Program> program_;
};
std::shared_ptr<const Program> ExecutorTest::program_;

TEST_F(ExecutorTest, TbbExecutorManyThreadsOneProgram) {
  TbbExecutor executor(program_, 4);
  EXPECT_EQ(executor.num_threads(), 4);
  EXPECT_EQ(hammer(executor, 8, 500), 8 * 500);
}

TEST_F(ExecutorTest, SyncExecutorFromSeveralThreads) {
  SyncExecutor executor(program_);
  EXPECT_EQ(hammer(executor, 4, 200), 4 * 200);
}

TEST_F(ExecutorTest, SeveralExecutorsShareOneProgram) {
  TbbExecutor a(program_, 2);
  TbbExecutor b(program_, 3);
  SyncExecutor c(program_);
  std::thread ta([&] { EXPECT_EQ(hammer(a, 2, 100), 200); });
  std::thread tb([&] { EXPECT_EQ(hammer(b, 2, 100), 200); });
  EXPECT_EQ(hammer(c, 2, 100), 200);
  ta.join();
  tb.join();
}

void expect_failure_then_success(Executor& executor) {
  std::vector<Value> unlucky{f32_tensor(std::vector<float>(13, 1.0f)),
                             f32_tensor(std::vector<float>(13, 2.0f))};
  for (int i = 0; i < 3; ++i) {
    EXPECT_USER_ERROR(executor.run(unlucky), "assertion failed: n must not be 13");
    EXPECT_TRUE(run_and_check(executor, 12, 7));
    EXPECT_TRUE(run_and_check(executor, 14, 9));
  }
  // A run rejected by the signature check does not poison it either.
  std::vector<Value> wrong{f32_tensor({1, 2}), f32_tensor({1, 2, 3})};
  EXPECT_USER_ERROR(executor.run(wrong), "dim 'n'");
  EXPECT_TRUE(run_and_check(executor, 5, 11));
}

TEST_F(ExecutorTest, FailedRunDoesNotPoisonThePooledVmSync) {
  SyncExecutor executor(program_);
  expect_failure_then_success(executor);
}

TEST_F(ExecutorTest, FailedRunDoesNotPoisonThePooledVmTbb) {
  TbbExecutor executor(program_, 4);
  expect_failure_then_success(executor);
}

TEST_F(ExecutorTest, FailuresInterleavedWithSuccessesAcrossThreads) {
  TbbExecutor executor(program_, 4);
  std::atomic<int> failures{0}, successes{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 6; ++t) {
    pool.emplace_back([&, t] {
      for (int r = 0; r < 60; ++r) {
        if ((t + r) % 3 == 0) {
          std::vector<Value> unlucky{f32_tensor(std::vector<float>(13, 1.0f)),
                                     f32_tensor(std::vector<float>(13, 2.0f))};
          try {
            executor.run(unlucky);
          } catch (const UserError&) {
            failures.fetch_add(1);
          }
        } else if (run_and_check(executor, kLengths[r % std::size(kLengths)], t + r)) {
          successes.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(failures.load(), 120);
  EXPECT_EQ(successes.load(), 240);
}

}  // namespace
}  // namespace dynvm::vm
