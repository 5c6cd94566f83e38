// Per-device-type singletons behind DeviceAPI::get; not part of the public interface.
#pragma once

#include <string>

#include "vm/device.h"

namespace dynvm::vm {

DeviceAPI& cpu_device_api();
// Returns nullptr and fills *why_not when CUDA cannot be used on this machine.
DeviceAPI* cuda_device_api(std::string* why_not);

}  // namespace dynvm::vm
