// Tensors: allocation, views that share storage, bounds of from_storage, and DLPack in
// and out.
#include <gtest/gtest.h>

#include <numeric>

#include "vm/error.h"
#include "vm/tensor.h"

namespace dynvm::vm {
namespace {

TEST(Tensor, EmptyHasShapeDtypeAndAlignedData) {
  Tensor t = Tensor::empty({2, 3, 4}, DType::kFloat32);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_EQ(t.ndim(), 3);
  EXPECT_EQ(t.dim(1), 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % kTensorAlignment, 0u);
}

TEST(Tensor, ScalarAndZeroSizedTensors) {
  Tensor s = Tensor::empty({}, DType::kInt64);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.ndim(), 0);
  Tensor z = Tensor::empty({3, 0, 5}, DType::kFloat32);
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(z.nbytes(), 0u);
}

TEST(Tensor, NegativeOrOverflowingShapesAreUserErrors) {
  EXPECT_THROW(Tensor::empty({2, -1}, DType::kFloat32), UserError);
  EXPECT_THROW(Tensor::empty({1ll << 40, 1ll << 40}, DType::kFloat32), UserError);
}

TEST(Tensor, ReshapeViewSharesStorage) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kFloat32);
  Tensor v = t.reshape_view({3, 2});
  EXPECT_EQ(v.data(), t.data());
  EXPECT_EQ(v.shape(), (Shape{3, 2}));
  v.data_as<float>()[5] = 60;
  EXPECT_EQ(t.data_as<float>()[5], 60);
  EXPECT_THROW(t.reshape_view({4, 2}), UserError);
}

TEST(Tensor, FromStorageChecksThatTheViewFits) {
  Storage s = alloc_storage(64);
  Tensor a = Tensor::from_storage(s, 32, {8}, DType::kFloat32);  // bytes 32..64
  EXPECT_EQ(static_cast<char*>(a.data()) - static_cast<char*>(s->data()), 32);
  EXPECT_THROW(Tensor::from_storage(s, 36, {8}, DType::kFloat32), UserError);
  EXPECT_THROW(Tensor::from_storage(s, -4, {1}, DType::kFloat32), UserError);
  EXPECT_THROW(Tensor::from_storage(s, 0, {17}, DType::kFloat32), UserError);
}

TEST(Tensor, DlpackExportKeepsTheTensorAliveAndFoldsTheOffset) {
  Storage s = alloc_storage(256);
  Tensor t = Tensor::from_storage(s, 64, {2, 4}, DType::kInt32);
  std::iota(t.data_as<int32_t>(), t.data_as<int32_t>() + 8, 10);
  DLManagedTensor* m = t.to_dlpack();
  t = Tensor();
  s.reset();  // the DLPack tensor is now the only owner
  EXPECT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[1], 4);
  EXPECT_EQ(m->dl_tensor.byte_offset, 0u);
  EXPECT_EQ(static_cast<int32_t*>(m->dl_tensor.data)[7], 17);
  m->deleter(m);
}

int g_import_deletions = 0;

TEST(Tensor, DlpackImportIsZeroCopyAndCallsTheDeleterOnce) {
  std::vector<double> values = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5};
  int64_t shape[2] = {2, 2};
  auto* m = new DLManagedTensor{};
  // A 2x2 view that starts at the second element.
  m->dl_tensor = DLTensor{values.data(), {kDLCPU, 0}, 2, {kDLFloat, 64, 1}, shape, nullptr, 8};
  m->deleter = [](DLManagedTensor* self) {
    ++g_import_deletions;
    delete self;
  };
  g_import_deletions = 0;
  {
    Tensor t = Tensor::from_dlpack(m);
    EXPECT_EQ(t.dtype(), DType::kFloat64);
    EXPECT_EQ(t.shape(), (Shape{2, 2}));
    EXPECT_EQ(t.data(), values.data() + 1);
    EXPECT_EQ(t.data_as<double>()[3], 5.5);
    Tensor copy = t;  // a second handle: still one deleter call
    EXPECT_EQ(g_import_deletions, 0);
  }
  EXPECT_EQ(g_import_deletions, 1);
}

TEST(Tensor, DlpackImportRejectsStridedTensorsAndCallsTheDeleter) {
  static int deletions = 0;
  float data[6] = {};
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {1, 2};  // column-major
  auto* m = new DLManagedTensor{};
  m->dl_tensor = DLTensor{data, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, strides, 0};
  m->deleter = [](DLManagedTensor* self) {
    ++deletions;
    delete self;
  };
  EXPECT_THROW(Tensor::from_dlpack(m), UserError);
  EXPECT_EQ(deletions, 1);
}

}  // namespace
}  // namespace dynvm::vm
