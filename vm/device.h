// Devices and the per-device API (allocate, free, copy, synchronize).
// CPU is always there. CUDA goes through the driver API, opened with dlopen at first use,
// so a build with CUDA support loads and runs on a machine without a GPU and says
// clearly, when a CUDA executable meets such a machine, what is missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dynvm::vm {

// Values match DLDeviceType, and are part of the .vmexe format.
enum class DeviceType : int32_t { kCPU = 1, kCUDA = 2 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int32_t id = 0;
  bool operator==(const Device&) const = default;
};

inline constexpr Device kCpu{DeviceType::kCPU, 0};

bool is_valid_device_type(int64_t code);
std::string device_name(Device d);  // "cpu", "cuda:0"

class DeviceAPI {
 public:
  virtual ~DeviceAPI() = default;
  // Returns memory aligned to at least `alignment`; throws UserError when out of memory.
  virtual void* alloc(size_t bytes, size_t alignment) = 0;
  virtual void free(void* ptr) = 0;
  // Copies between this device and the host, or within this device.
  virtual void copy(void* dst, Device dst_device, const void* src, Device src_device,
                    size_t bytes) = 0;
  virtual void synchronize() = 0;

  // The process-wide API of a device type. Throws UserError for a CUDA device when the
  // driver or a GPU is missing, saying which.
  static DeviceAPI& get(Device device);
};

// Whether CUDA can be used here; when not, *why_not says what is missing.
bool cuda_available(std::string* why_not = nullptr);

}  // namespace dynvm::vm
