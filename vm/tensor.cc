#include "vm/tensor.h"

#include <cstring>
#include <limits>

#include "vm/error.h"

namespace dynvm::vm {

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) user_error("negative dimension in shape ", shape_str(shape));
    if (__builtin_mul_overflow(n, d, &n)) user_error("shape ", shape_str(shape), " is too large");
  }
  return n;
}

std::string shape_str(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {

class PooledStorage final : public StorageImpl {
 public:
  PooledStorage(PooledAllocator& pool, Block block, size_t nbytes)
      : StorageImpl(block.ptr, nbytes, pool.device()), pool_(pool), block_(block) {}
  ~PooledStorage() override { pool_.free(block_); }

 private:
  PooledAllocator& pool_;
  Block block_;
};

class DLPackStorage final : public StorageImpl {
 public:
  DLPackStorage(DLManagedTensor* managed, void* data, size_t nbytes, Device device)
      : StorageImpl(data, nbytes, device), managed_(managed) {}
  ~DLPackStorage() override {
    if (managed_->deleter != nullptr) managed_->deleter(managed_);
  }

 private:
  DLManagedTensor* managed_;
};

}  // namespace

Storage alloc_storage(size_t bytes, Device device) {
  PooledAllocator& pool = device_allocator(device);
  return std::make_shared<PooledStorage>(pool, pool.alloc(bytes), bytes);
}

Tensor Tensor::empty(Shape shape, DType dtype, Device device) {
  int64_t n = shape_numel(shape);
  size_t bytes;
  if (__builtin_mul_overflow(static_cast<size_t>(n), dtype_size(dtype), &bytes)) {
    user_error("tensor of shape ", shape_str(shape), " is too large");
  }
  return Tensor(std::make_shared<const Node>(
      Node{alloc_storage(bytes, device), 0, std::move(shape), n, dtype}));
}

Tensor Tensor::from_storage(Storage storage, int64_t byte_offset, Shape shape, DType dtype) {
  int64_t n = shape_numel(shape);
  size_t bytes;
  if (byte_offset < 0 ||
      __builtin_mul_overflow(static_cast<size_t>(n), dtype_size(dtype), &bytes) ||
      static_cast<size_t>(byte_offset) > storage->nbytes() ||
      bytes > storage->nbytes() - static_cast<size_t>(byte_offset)) {
    user_error("tensor ", shape_str(shape), " ", dtype_name(dtype), " at byte offset ",
               byte_offset, " does not fit in a storage of ", storage->nbytes(), " bytes");
  }
  return Tensor(std::make_shared<const Node>(
      Node{std::move(storage), byte_offset, std::move(shape), n, dtype}));
}

Tensor Tensor::reshape_view(Shape new_shape) const {
  int64_t n = shape_numel(new_shape);
  if (n != numel()) {
    user_error("cannot reshape ", shape_str(shape()), " (", numel(), " elements) to ",
               shape_str(new_shape), " (", n, " elements)");
  }
  return Tensor(std::make_shared<const Node>(
      Node{node_->storage, node_->byte_offset, std::move(new_shape), n, node_->dtype}));
}

Tensor Tensor::row_view(int64_t i) const {
  const Shape& s = shape();
  if (s.empty()) user_error("row_view of a scalar");
  if (i < -s[0] || i >= s[0]) {
    user_error("index ", i, " is out of range for axis 0 of a tensor of shape ", shape_str(s));
  }
  if (i < 0) i += s[0];
  Shape row(s.begin() + 1, s.end());
  const int64_t n = shape_numel(row);
  const int64_t offset = node_->byte_offset + i * n * static_cast<int64_t>(dtype_size(dtype()));
  return Tensor(
      std::make_shared<const Node>(Node{node_->storage, offset, std::move(row), n, node_->dtype}));
}

Tensor Tensor::copy_to(Device device) const {
  Tensor out = empty(shape(), dtype(), device);
  Device src = this->device();
  DeviceAPI& api = DeviceAPI::get(device.type == DeviceType::kCPU ? src : device);
  api.copy(out.data(), device, data(), src, nbytes());
  return out;
}

DLTensor Tensor::as_dltensor() const {
  DLTensor t{};
  // The offset is folded into `data` (valid for CPU and CUDA pointers) so that kernels
  // never have to look at byte_offset.
  t.data = data();
  t.device = DLDevice{static_cast<DLDeviceType>(device().type), device().id};
  t.ndim = static_cast<int32_t>(node_->shape.size());
  t.dtype = vm::to_dlpack(node_->dtype);
  t.shape = const_cast<int64_t*>(node_->shape.data());
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

namespace {

struct ManagedContext {
  Tensor owner;
};

void delete_managed(DLManagedTensor* self) {
  delete static_cast<ManagedContext*>(self->manager_ctx);
  delete self;
}

}  // namespace

DLManagedTensor* Tensor::to_dlpack() const {
  auto* managed = new DLManagedTensor{};
  auto* ctx = new ManagedContext{*this};
  managed->dl_tensor = ctx->owner.as_dltensor();
  managed->manager_ctx = ctx;
  managed->deleter = delete_managed;
  return managed;
}

Tensor Tensor::from_dlpack(DLManagedTensor* managed) {
  const DLTensor& t = managed->dl_tensor;
  auto fail = [&](const std::string& why) {
    if (managed->deleter != nullptr) managed->deleter(managed);
    user_error("cannot import DLPack tensor: ", why);
  };
  std::optional<DType> dtype = vm::from_dlpack(t.dtype);
  if (!dtype) fail("unsupported data type");
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDA) {
    fail("unsupported device");
  }
  if (t.ndim < 0) fail("negative rank");
  Shape shape(t.shape, t.shape + t.ndim);
  if (t.strides != nullptr) {
    int64_t expected = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (shape[i] != 1 && t.strides[i] != expected) fail("only row-major contiguous tensors");
      expected *= shape[i];
    }
  }
  int64_t n = shape_numel(shape);
  size_t bytes = static_cast<size_t>(n) * dtype_size(*dtype);
  Device device{static_cast<DeviceType>(t.device.device_type), t.device.device_id};
  auto storage = std::make_shared<DLPackStorage>(managed, t.data, t.byte_offset + bytes, device);
  return from_storage(std::move(storage), static_cast<int64_t>(t.byte_offset), std::move(shape),
                      *dtype);
}

}  // namespace dynvm::vm
