// The pooled allocator: size classes, reuse, the bound on cached memory when shapes vary,
// and safety under concurrent use.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "vm/allocator.h"
#include "vm/tensor.h"

namespace dynvm::vm {
namespace {

TEST(PooledAllocator, SizeClassesWasteAtMostAQuarter) {
  EXPECT_EQ(PooledAllocator::size_class(1), 64u);
  EXPECT_EQ(PooledAllocator::size_class(64), 64u);
  EXPECT_EQ(PooledAllocator::size_class(65), 80u);    // 64 + 16
  EXPECT_EQ(PooledAllocator::size_class(1000), 1024u);
  EXPECT_EQ(PooledAllocator::size_class(1025), 1280u);
  for (size_t n = 1; n < (1u << 22); n = n * 3 + 1) {
    size_t c = PooledAllocator::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, std::max<size_t>(64, n + n / 4 + 1)) << n;
  }
}

TEST(PooledAllocator, ReusesFreedBlocksOfTheSameClass) {
  PooledAllocator pool(kCpu, DeviceAPI::get(kCpu), 1 << 20);
  Block a = pool.alloc(1000);
  void* first = a.ptr;
  pool.free(a);
  Block b = pool.alloc(1010);  // same class (1024)
  EXPECT_EQ(b.ptr, first);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.device_allocs, 1u);
  EXPECT_EQ(s.reuses, 1u);
  pool.free(b);
}

// A request whose class holds nothing takes the smallest cached block up to twice its
// size (its capacity, which it gives back to its own class), never a larger one.
TEST(PooledAllocator, ARequestTakesTheSmallestCachedBlockUpToTwiceItsSize) {
  PooledAllocator pool(kCpu, DeviceAPI::get(kCpu), 1 << 20);
  Block big = pool.alloc(4000), bigger = pool.alloc(8000), huge = pool.alloc(16000);
  void* big_ptr = big.ptr;
  pool.free(huge);
  pool.free(bigger);
  pool.free(big);  // 4096, 8192 and 16384 bytes cached
  Block small = pool.alloc(2500);  // class 2560: 4096 is the smallest that fits
  EXPECT_EQ(small.ptr, big_ptr);
  EXPECT_EQ(small.capacity, 4096u);
  Block tiny = pool.alloc(1000);  // 1024: 8192 and 16384 are more than twice that
  EXPECT_EQ(pool.stats().device_allocs, 4u);
  EXPECT_EQ(pool.stats().reuses, 1u);
  pool.free(small);
  pool.free(tiny);
  Block again = pool.alloc(4096);  // back in its own class
  EXPECT_EQ(again.ptr, big_ptr);
  pool.free(again);
}

TEST(PooledAllocator, CachedBytesStayBoundedWhenShapesVary) {
  const size_t limit = 1 << 18;
  PooledAllocator pool(kCpu, DeviceAPI::get(kCpu), limit);
  std::mt19937 rng(7);
  // Thousands of requests with ever-changing sizes: the cache never holds more than the
  // limit, and old sizes are evicted rather than kept forever.
  for (int i = 0; i < 5000; ++i) {
    size_t bytes = 1000 + rng() % 200000;
    Block b = pool.alloc(bytes);
    static_cast<char*>(b.ptr)[0] = 1;
    pool.free(b);
    ASSERT_LE(pool.stats().cached_bytes, limit);
  }
  PoolStats s = pool.stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(s.live_bytes, 0u);
  pool.release_cached();
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
}

TEST(PooledAllocator, EvictionGivesBackTheLeastRecentlyFreedBlockFirst) {
  PooledAllocator pool(kCpu, DeviceAPI::get(kCpu), 3000);
  Block a = pool.alloc(1000), b = pool.alloc(1500), c = pool.alloc(1000);  // 1024, 1536, 1024
  void* b_ptr = b.ptr;
  void* c_ptr = c.ptr;
  pool.free(a);
  pool.free(b);
  pool.free(c);  // 3584 bytes would be cached: a, the oldest, goes
  PoolStats s = pool.stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.cached_bytes, 2560u);
  Block again = pool.alloc(1000);
  EXPECT_EQ(again.ptr, c_ptr);
  Block wide = pool.alloc(1400);  // 1536's class
  EXPECT_EQ(wide.ptr, b_ptr);
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
  pool.free(again);
  pool.free(wide);
  // Sizes far apart (64 bytes to 256 MiB) each come back from their own class.
  PooledAllocator big(kCpu, DeviceAPI::get(kCpu), size_t{2} << 30);
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{5000}, size_t{1} << 28}) {
    Block x = big.alloc(bytes);
    void* ptr = x.ptr;
    big.free(x);
    Block y = big.alloc(bytes);
    EXPECT_EQ(y.ptr, ptr) << bytes;
    big.free(y);
  }
  big.release_cached();
  EXPECT_EQ(big.stats().cached_bytes, 0u);
}

TEST(PooledAllocator, BlocksLargerThanTheCacheGoStraightBack) {
  PooledAllocator pool(kCpu, DeviceAPI::get(kCpu), 4096);
  Block b = pool.alloc(1 << 20);
  pool.free(b);
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
}

TEST(PooledAllocator, ConcurrentAllocAndFreeKeepAccountsExact) {
  PooledAllocator pool(kCpu, DeviceAPI::get(kCpu), 8 << 20);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&pool, t] {
      std::mt19937 rng(t);
      std::vector<Block> held;
      for (int i = 0; i < 2000; ++i) {
        if (held.size() < 8 && rng() % 2 == 0) {
          Block b = pool.alloc(64 + rng() % 50000);
          std::memset(b.ptr, t, 64);
          held.push_back(b);
        } else if (!held.empty()) {
          EXPECT_EQ(static_cast<unsigned char*>(held.back().ptr)[63], t);
          pool.free(held.back());
          held.pop_back();
        }
      }
      for (Block b : held) pool.free(b);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(pool.stats().live_bytes, 0u);
  EXPECT_LE(pool.stats().cached_bytes, size_t{8} << 20);
}

TEST(PooledAllocator, TensorsReturnTheirStorageToTheDevicePool) {
  PooledAllocator& pool = device_allocator(kCpu);
  size_t live_before = pool.stats().live_bytes;
  {
    Tensor t = Tensor::empty({1000}, DType::kFloat32);
    EXPECT_GE(pool.stats().live_bytes, live_before + 4000);
  }
  EXPECT_EQ(pool.stats().live_bytes, live_before);
}

}  // namespace
}  // namespace dynvm::vm
