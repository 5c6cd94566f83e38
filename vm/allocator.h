// Memory for tensors. A PooledAllocator per device keeps freed blocks in size classes
// (four per power of two, so at most 25% is wasted) and hands them out again; this makes
// allocation in the VM's steady state a mutex and a vector pop instead of a trip to the
// system allocator or the CUDA driver (nothing else is allocated: a loop step that makes a
// few tensors pays no malloc for the pool's bookkeeping).
//
// The pool gives memory back: cached (free) bytes are bounded by `max_cached_bytes`,
// evicting least-recently-freed blocks first. When input shapes vary from run to run
// the blocks of old sizes age out instead of accumulating until the process runs out
// of memory (the failure TVM's VM users reported with its naive pool).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "vm/device.h"

namespace dynvm::vm {

inline constexpr size_t kTensorAlignment = 64;

struct Block {
  void* ptr = nullptr;
  size_t capacity = 0;  // the size class, >= the requested bytes
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Block alloc(size_t bytes) = 0;
  virtual void free(Block block) = 0;
  virtual Device device() const = 0;
};

struct PoolStats {
  size_t live_bytes = 0;       // handed out and not yet freed
  size_t cached_bytes = 0;     // freed, kept for reuse
  size_t peak_bytes = 0;       // max of live + cached
  uint64_t device_allocs = 0;  // calls that reached the device
  uint64_t reuses = 0;         // calls served from the cache
  uint64_t evictions = 0;      // cached blocks given back to the device
};

class PooledAllocator final : public Allocator {
 public:
  PooledAllocator(Device device, DeviceAPI& api, size_t max_cached_bytes);
  ~PooledAllocator() override;

  Block alloc(size_t bytes) override;
  void free(Block block) override;
  Device device() const override { return device_; }

  // Gives every cached block back to the device.
  void release_cached();
  void set_max_cached_bytes(size_t bytes);
  PoolStats stats() const;
  // Starts peak_bytes again from what the pool holds now (live + cached): the peak of one
  // phase of a program, such as the runs of one model at one size (vmbench).
  void reset_peak();

  // The size class a request of `bytes` is rounded up to.
  static size_t size_class(size_t bytes);

 private:
  struct Cached {
    void* ptr;
    size_t capacity;
    uint64_t freed;  // when, in frees: larger is more recent
  };
  // Four classes per power of two from 64 bytes: 4 * 58 cover every size_t.
  static constexpr size_t kNumClasses = 4 * 58;
  // A request its class cannot serve takes a cached block of up to this many classes
  // above (four: twice its size).
  static constexpr size_t kLargerClasses = 4;
  static size_t class_index(size_t capacity);
  void evict_to(size_t limit);  // mu_ held; least recently freed first

  Device device_;
  DeviceAPI& api_;
  size_t max_cached_bytes_;
  mutable std::mutex mu_;
  // Per class, oldest first: alloc pops the most recently freed block (warm in the cache),
  // eviction takes the oldest front of all classes.
  std::array<std::vector<Cached>, kNumClasses> free_;
  uint64_t frees_ = 0;
  PoolStats stats_;
};

// The process-wide pooled allocator of a device. The cache bound defaults to 512 MiB and
// can be set with the environment variable DYNVM_POOL_CACHE_MB.
PooledAllocator& device_allocator(Device device);

}  // namespace dynvm::vm
