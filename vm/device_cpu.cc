// The host device: aligned allocation and memcpy.
#include <cstdlib>
#include <cstring>
#include <new>

#include "vm/device.h"
#include "vm/device_internal.h"
#include "vm/error.h"

namespace dynvm::vm {
namespace {

class CpuDeviceAPI final : public DeviceAPI {
 public:
  void* alloc(size_t bytes, size_t alignment) override {
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    if (rounded == 0) rounded = alignment;
    void* ptr = std::aligned_alloc(alignment, rounded);
    if (ptr == nullptr) user_error("out of host memory allocating ", bytes, " bytes");
    return ptr;
  }
  void free(void* ptr) override { std::free(ptr); }
  void copy(void* dst, Device dst_device, const void* src, Device src_device,
            size_t bytes) override {
    DYNVM_INTERNAL_CHECK(dst_device.type == DeviceType::kCPU &&
                         src_device.type == DeviceType::kCPU);
    if (bytes != 0) std::memcpy(dst, src, bytes);
  }
  void synchronize() override {}
};

}  // namespace

DeviceAPI& cpu_device_api() {
  // Never destroyed: pooled storage may be released during static destruction.
  static auto* api = new CpuDeviceAPI();
  return *api;
}

}  // namespace dynvm::vm
