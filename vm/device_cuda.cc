// The CUDA device, through the driver API opened with dlopen (see cuda_driver.h).
#include <dlfcn.h>

#include <mutex>
#include <vector>

#include "vm/cuda_driver.h"
#include "vm/device.h"
#include "vm/device_internal.h"
#include "vm/error.h"

namespace dynvm::vm {
namespace cuda {
namespace {

struct DriverState {
  DriverApi api{};
  bool ok = false;
  std::string why_not;
  std::vector<CUcontext> contexts;  // primary context per device ordinal
};

template <typename Fn>
bool resolve(void* lib, const char* name, Fn*& out) {
  out = reinterpret_cast<Fn*>(dlsym(lib, name));
  return out != nullptr;
}

DriverState* load_driver() {
  auto* s = new DriverState();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    s->why_not = "the CUDA driver (libcuda.so.1) is not installed on this machine";
    return s;
  }
  DriverApi& a = s->api;
  bool ok = resolve(lib, "cuInit", a.cuInit) &&
            resolve(lib, "cuDeviceGetCount", a.cuDeviceGetCount) &&
            resolve(lib, "cuDeviceGet", a.cuDeviceGet) &&
            resolve(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain) &&
            resolve(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent) &&
            resolve(lib, "cuCtxSynchronize", a.cuCtxSynchronize) &&
            resolve(lib, "cuMemAlloc_v2", a.cuMemAlloc) &&
            resolve(lib, "cuMemFree_v2", a.cuMemFree) &&
            resolve(lib, "cuMemcpyHtoD_v2", a.cuMemcpyHtoD) &&
            resolve(lib, "cuMemcpyDtoH_v2", a.cuMemcpyDtoH) &&
            resolve(lib, "cuMemcpyDtoD_v2", a.cuMemcpyDtoD) &&
            resolve(lib, "cuModuleLoadData", a.cuModuleLoadData) &&
            resolve(lib, "cuModuleGetFunction", a.cuModuleGetFunction) &&
            resolve(lib, "cuLaunchKernel", a.cuLaunchKernel) &&
            resolve(lib, "cuGetErrorString", a.cuGetErrorString) &&
            resolve(lib, "cuDeviceGetName", a.cuDeviceGetName);
  if (!ok) {
    s->why_not = "the CUDA driver (libcuda.so.1) is too old: a driver API entry is missing";
    return s;
  }
  if (CUresult r = a.cuInit(0); r != 0) {
    const char* msg = "unknown error";
    a.cuGetErrorString(r, &msg);
    s->why_not = str_cat("the CUDA driver failed to initialise (", msg ? msg : "?",
                         "): is there a GPU?");
    return s;
  }
  int count = 0;
  if (a.cuDeviceGetCount(&count) != 0 || count == 0) {
    s->why_not = "the CUDA driver is installed but reports no GPU";
    return s;
  }
  s->contexts.assign(count, nullptr);
  s->ok = true;
  return s;
}

DriverState& state() {
  static DriverState* s = load_driver();  // never destroyed, like the driver itself
  return *s;
}

}  // namespace

const DriverApi* driver(std::string* why_not) {
  DriverState& s = state();
  if (!s.ok) {
    if (why_not != nullptr) *why_not = s.why_not;
    return nullptr;
  }
  return &s.api;
}

void check(CUresult result, const char* what) {
  if (result == 0) return;
  const char* msg = nullptr;
  if (const DriverApi* api = driver(nullptr)) api->cuGetErrorString(result, &msg);
  user_error("CUDA ", what, " failed: ", msg != nullptr ? msg : "unknown error", " (",
             result, ")");
}

// Makes the primary context of `ordinal` current on the calling thread.
void make_current(int ordinal) {
  DriverState& s = state();
  if (ordinal < 0 || ordinal >= static_cast<int>(s.contexts.size())) {
    user_error("no CUDA device cuda:", ordinal, " (this machine has ", s.contexts.size(),
               ")");
  }
  static std::mutex mu;
  CUcontext ctx;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (s.contexts[ordinal] == nullptr) {
      CUdevice dev;
      check(s.api.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
      check(s.api.cuDevicePrimaryCtxRetain(&s.contexts[ordinal], dev), "context creation");
    }
    ctx = s.contexts[ordinal];
  }
  check(s.api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

}  // namespace cuda

namespace {

class CudaDeviceAPI final : public DeviceAPI {
 public:
  explicit CudaDeviceAPI(const cuda::DriverApi& api) : api_(api) {}

  // Device pointers are 256-byte aligned by the driver, enough for any `alignment` we ask.
  void* alloc(size_t bytes, size_t alignment) override {
    cuda::make_current(0);
    cuda::CUdeviceptr ptr = 0;
    cuda::check(api_.cuMemAlloc(&ptr, bytes == 0 ? 1 : bytes), "memory allocation");
    return reinterpret_cast<void*>(ptr);
  }
  void free(void* ptr) override {
    cuda::make_current(0);
    api_.cuMemFree(reinterpret_cast<cuda::CUdeviceptr>(ptr));
  }
  void copy(void* dst, Device dst_device, const void* src, Device src_device,
            size_t bytes) override {
    if (bytes == 0) return;
    auto d = reinterpret_cast<cuda::CUdeviceptr>(dst);
    auto s = reinterpret_cast<cuda::CUdeviceptr>(src);
    bool dst_gpu = dst_device.type == DeviceType::kCUDA;
    bool src_gpu = src_device.type == DeviceType::kCUDA;
    cuda::make_current(dst_gpu ? dst_device.id : src_device.id);
    if (dst_gpu && src_gpu) {
      cuda::check(api_.cuMemcpyDtoD(d, s, bytes), "device-to-device copy");
    } else if (dst_gpu) {
      cuda::check(api_.cuMemcpyHtoD(d, src, bytes), "host-to-device copy");
    } else if (src_gpu) {
      cuda::check(api_.cuMemcpyDtoH(dst, s, bytes), "device-to-host copy");
    } else {
      DYNVM_INTERNAL_CHECK(false, "host-to-host copy through the CUDA device API");
    }
  }
  void synchronize() override {
    cuda::make_current(0);
    cuda::check(api_.cuCtxSynchronize(), "synchronize");
  }

 private:
  const cuda::DriverApi& api_;
};

}  // namespace

DeviceAPI* cuda_device_api(std::string* why_not) {
  const cuda::DriverApi* api = cuda::driver(why_not);
  if (api == nullptr) return nullptr;
  static auto* device_api = new CudaDeviceAPI(*api);
  return device_api;
}

}  // namespace dynvm::vm
