// Devices. The CPU always works. CUDA goes through dlopen'd libcuda: on a machine with a
// GPU the round trip host -> device -> host must preserve the bytes; on one without, the
// runtime must say clearly what is missing instead of failing to start.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "vm/device.h"
#include "vm/error.h"
#include "vm/tensor.h"

namespace dynvm::vm {
namespace {

TEST(Device, Names) {
  EXPECT_EQ(device_name(kCpu), "cpu");
  EXPECT_EQ(device_name(Device{DeviceType::kCUDA, 1}), "cuda:1");
}

TEST(Device, CpuCopyIsExact) {
  DeviceAPI& api = DeviceAPI::get(kCpu);
  std::vector<int> src(100);
  std::iota(src.begin(), src.end(), 0);
  void* dst = api.alloc(400, 64);
  api.copy(dst, kCpu, src.data(), kCpu, 400);
  EXPECT_EQ(static_cast<int*>(dst)[99], 99);
  api.free(dst);
}

TEST(Device, CudaRoundTripOrAClearMessage) {
  std::string why;
  Device gpu{DeviceType::kCUDA, 0};
  if (!cuda_available(&why)) {
    EXPECT_FALSE(why.empty());
    try {
      DeviceAPI::get(gpu);
      FAIL() << "DeviceAPI::get(cuda) should fail without a GPU";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("needs a CUDA GPU"), std::string::npos) << e.what();
    }
    GTEST_SKIP() << "no GPU here: " << why;
  }
  Tensor host = Tensor::empty({1 << 16}, DType::kFloat32);
  std::iota(host.data_as<float>(), host.data_as<float>() + host.numel(), 0.5f);
  Tensor on_gpu = host.copy_to(gpu);
  EXPECT_EQ(on_gpu.device(), gpu);
  Tensor gpu_copy = on_gpu.copy_to(gpu);  // device to device
  Tensor back = gpu_copy.copy_to(kCpu);
  ASSERT_EQ(back.numel(), host.numel());
  EXPECT_EQ(std::memcmp(back.data(), host.data(), host.nbytes()), 0);
  DeviceAPI::get(gpu).synchronize();
}

}  // namespace
}  // namespace dynvm::vm
