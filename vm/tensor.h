// Tensors: reference-counted storage + byte offset + shape + dtype, row-major and
// contiguous. Views share storage (zero copy). A Tensor is a cheap handle: copying it
// copies one shared pointer, which keeps VM register moves cheap.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vm/allocator.h"
#include "vm/device.h"
#include "vm/dtype.h"
#include "vm/error.h"

namespace dynvm::vm {

using Shape = std::vector<int64_t>;

// Number of elements; throws UserError on a negative dim or on overflow.
int64_t shape_numel(std::span<const int64_t> shape);
std::string shape_str(std::span<const int64_t> shape);  // "[2, 3]"

// A buffer on one device. Pooled storage returns its block to the allocator when the
// last reference dies; external storage (from DLPack) calls the producer's deleter.
class StorageImpl {
 public:
  virtual ~StorageImpl() = default;
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 protected:
  StorageImpl(void* data, size_t nbytes, Device device)
      : data_(data), nbytes_(nbytes), device_(device) {}

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
};

using Storage = std::shared_ptr<const StorageImpl>;

// `bytes` from the device's pooled allocator.
Storage alloc_storage(size_t bytes, Device device = kCpu);

class Tensor {
 public:
  Tensor() = default;

  // Uninitialised contents.
  static Tensor empty(Shape shape, DType dtype, Device device = kCpu);
  // A view of `storage` at `byte_offset`; throws UserError if it does not fit.
  static Tensor from_storage(Storage storage, int64_t byte_offset, Shape shape, DType dtype);
  // Host tensor holding a copy of `values`.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape, DType dtype);

  bool defined() const { return node_ != nullptr; }
  const Shape& shape() const { return node_->shape; }
  int64_t ndim() const { return static_cast<int64_t>(node_->shape.size()); }
  int64_t dim(int64_t axis) const { return node_->shape[axis]; }
  DType dtype() const { return node_->dtype; }
  Device device() const { return node_->storage->device(); }
  int64_t numel() const { return node_->numel; }
  size_t nbytes() const { return static_cast<size_t>(node_->numel) * dtype_size(dtype()); }
  int64_t byte_offset() const { return node_->byte_offset; }
  const Storage& storage() const { return node_->storage; }

  void* data() const { return static_cast<char*>(node_->storage->data()) + node_->byte_offset; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data());
  }

  // Same storage, new shape with the same number of elements.
  Tensor reshape_view(Shape new_shape) const;
  // Element `i` along axis 0 (rank >= 1), sharing the storage: shape()[1:] at the row's
  // offset. `i` in [-shape()[0], shape()[0]), negative counting from the end (ONNX
  // Gather's rule); else UserError.
  Tensor row_view(int64_t i) const;
  // A deep copy on `device`.
  Tensor copy_to(Device device) const;

  // A non-owning DLTensor describing this tensor; valid while this Tensor lives.
  DLTensor as_dltensor() const;
  // An owning DLPack tensor; the consumer calls its deleter.
  DLManagedTensor* to_dlpack() const;
  // Takes ownership of `managed` (contiguous, row-major only; throws UserError otherwise).
  static Tensor from_dlpack(DLManagedTensor* managed);

 private:
  struct Node {
    Storage storage;
    int64_t byte_offset;
    Shape shape;
    int64_t numel;
    DType dtype;
  };
  explicit Tensor(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, Shape shape, DType dtype) {
  Tensor t = empty(std::move(shape), dtype);
  DYNVM_INTERNAL_CHECK(
      static_cast<size_t>(t.numel()) == values.size() && sizeof(T) == dtype_size(dtype),
      "Tensor::from_vector: ", values.size(), " values of ", sizeof(T), " bytes for ", t.numel(),
      " elements of ", dtype_size(dtype));
  std::copy(values.begin(), values.end(), t.data_as<T>());
  return t;
}

}  // namespace dynvm::vm
