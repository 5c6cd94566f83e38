#include "vm/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <map>

#include "vm/error.h"

namespace dynvm::vm {

PooledAllocator::PooledAllocator(Device device, DeviceAPI& api, size_t max_cached_bytes)
    : device_(device), api_(api), max_cached_bytes_(max_cached_bytes) {}

PooledAllocator::~PooledAllocator() { release_cached(); }

size_t PooledAllocator::size_class(size_t bytes) {
  if (bytes <= kTensorAlignment) return kTensorAlignment;
  // Four classes per power of two: 2^k, 1.25*2^k, 1.5*2^k, 1.75*2^k.
  size_t pow = std::bit_floor(bytes);
  size_t step = pow / 4;
  size_t rounded = (bytes + step - 1) / step * step;
  return std::max(rounded, kTensorAlignment);
}

size_t PooledAllocator::class_index(size_t capacity) {
  const size_t pow = std::bit_floor(capacity);
  return 4 * static_cast<size_t>(std::countr_zero(pow) - 6) + (capacity / (pow / 4) - 4);
}

Block PooledAllocator::alloc(size_t bytes) {
  size_t capacity = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Its own class, else the smallest of the next classes, up to twice the size, that
    // holds a block: tensors whose sizes only the run knows (data-dependent, or returned)
    // come in ever different sizes, which exact classes kept apart.
    const size_t own = class_index(capacity);
    std::vector<Cached>* from = nullptr;
    for (size_t c = own; from == nullptr && c <= own + kLargerClasses && c < kNumClasses; ++c) {
      if (!free_[c].empty()) from = &free_[c];
    }
    if (from != nullptr) {
      const Cached block = from->back();
      from->pop_back();
      stats_.cached_bytes -= block.capacity;
      stats_.live_bytes += block.capacity;
      ++stats_.reuses;
      return Block{block.ptr, block.capacity};
    }
  }
  void* ptr = nullptr;
  try {
    ptr = api_.alloc(capacity, kTensorAlignment);
  } catch (const UserError&) {
    // Out of memory: give the cache back and try once more before failing.
    release_cached();
    ptr = api_.alloc(capacity, kTensorAlignment);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.device_allocs;
  stats_.live_bytes += capacity;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.live_bytes + stats_.cached_bytes);
  return Block{ptr, capacity};
}

void PooledAllocator::free(Block block) {
  if (block.ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  stats_.live_bytes -= block.capacity;
  if (block.capacity > max_cached_bytes_) {
    api_.free(block.ptr);
    ++stats_.evictions;
    return;
  }
  evict_to(max_cached_bytes_ - block.capacity);
  free_[class_index(block.capacity)].push_back(Cached{block.ptr, block.capacity, frees_++});
  stats_.cached_bytes += block.capacity;
}

void PooledAllocator::evict_to(size_t limit) {
  while (stats_.cached_bytes > limit) {
    std::vector<Cached>* oldest = nullptr;
    for (std::vector<Cached>& same_class : free_) {
      if (!same_class.empty() &&
          (oldest == nullptr || same_class.front().freed < oldest->front().freed)) {
        oldest = &same_class;
      }
    }
    if (oldest == nullptr) return;
    stats_.cached_bytes -= oldest->front().capacity;
    ++stats_.evictions;
    api_.free(oldest->front().ptr);
    oldest->erase(oldest->begin());
  }
}

void PooledAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  evict_to(0);
}

void PooledAllocator::set_max_cached_bytes(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  max_cached_bytes_ = bytes;
  evict_to(bytes);
}

PoolStats PooledAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PooledAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_bytes = stats_.live_bytes + stats_.cached_bytes;
}

namespace {

size_t default_cache_bytes() {
  if (const char* env = std::getenv("DYNVM_POOL_CACHE_MB")) {
    char* end = nullptr;
    unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0') return static_cast<size_t>(mb) << 20;
  }
  return size_t{512} << 20;
}

PooledAllocator& find_or_make_pool(Device device) {
  static std::mutex mu;
  // Never destroyed: tensors held in static objects may be freed during exit.
  static auto* pools = new std::map<std::pair<int, int>, PooledAllocator*>();
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(static_cast<int>(device.type), device.id);
  auto it = pools->find(key);
  if (it != pools->end()) return *it->second;
  DeviceAPI& api = DeviceAPI::get(device);
  auto* pool = new PooledAllocator(device, api, default_cache_bytes());
  pools->emplace(key, pool);
  return *pool;
}

}  // namespace

PooledAllocator& device_allocator(Device device) {
  // The host's pool without the lock and the lookup: every host tensor asks for it.
  if (device.type == DeviceType::kCPU && device.id == 0) {
    static PooledAllocator& cpu = find_or_make_pool(device);
    return cpu;
  }
  return find_or_make_pool(device);
}

}  // namespace dynvm::vm
