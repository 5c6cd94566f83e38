#include "vm/device.h"

#include "vm/device_internal.h"
#include "vm/error.h"

namespace dynvm::vm {

bool is_valid_device_type(int64_t code) {
  return code == static_cast<int64_t>(DeviceType::kCPU) ||
         code == static_cast<int64_t>(DeviceType::kCUDA);
}

std::string device_name(Device d) {
  switch (d.type) {
    case DeviceType::kCPU:
      return "cpu";
    case DeviceType::kCUDA:
      return str_cat("cuda:", d.id);
  }
  return str_cat("device(", static_cast<int>(d.type), ")");
}

DeviceAPI& DeviceAPI::get(Device device) {
  switch (device.type) {
    case DeviceType::kCPU:
      return cpu_device_api();
    case DeviceType::kCUDA: {
      std::string why;
      DeviceAPI* api = cuda_device_api(&why);
      if (api == nullptr) user_error("this executable needs a CUDA GPU, but ", why);
      return *api;
    }
  }
  user_error("unknown device type ", static_cast<int>(device.type));
}

bool cuda_available(std::string* why_not) {
  std::string why;
  bool ok = cuda_device_api(&why) != nullptr;
  if (!ok && why_not != nullptr) *why_not = why;
  return ok;
}

}  // namespace dynvm::vm
