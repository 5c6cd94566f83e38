// The entry function's results -> Python values, without copying: a tensor becomes a
// NumPy array over the VM's own buffer (NumPy's array supports __dlpack__ and
// __dlpack_device__, so PyTorch takes it as it is), kept alive by the array. A result is
// copied only where handing out the buffer would let one value change another: when it
// overlaps memory the caller lent as an input, an executable's constant, or a result
// already returned. bfloat16 tensors, which NumPy has no dtype for, become a
// dynvm.Tensor that speaks DLPack. Integers and shapes become int64 arrays, sequences
// lists, optionals None or their value.
#pragma once

#include <pybind11/pybind11.h>

#include <span>
#include <unordered_set>
#include <vector>

#include "python/src/feeds.h"
#include "vm/executable.h"
#include "vm/value.h"

namespace dynvm::python {

namespace py = pybind11;

// A tensor handed to Python without a NumPy dtype: it can only be exported (DLPack).
struct DLPackTensor {
  vm::Tensor tensor;
};

class ResultConverter {
 public:
  // `constants`: the storages of the executable's constants.
  ResultConverter(const std::vector<BorrowedRange>& borrowed,
                  const std::unordered_set<const vm::StorageImpl*>& constants)
      : borrowed_(borrowed), constants_(constants) {}

  // One result of the entry function, as its signature entry `spec` describes it.
  py::object convert(const vm::Value& value, const vm::TensorSpec& spec);

 private:
  py::object tensor(vm::Tensor t);
  bool must_copy(const vm::Tensor& t) const;

  const std::vector<BorrowedRange>& borrowed_;
  const std::unordered_set<const vm::StorageImpl*>& constants_;
  std::vector<BorrowedRange> returned_;
};

// A capsule named "dltensor" that owns `t`'s DLPack export (the __dlpack__ protocol).
py::capsule dlpack_capsule(const vm::Tensor& t);

}  // namespace dynvm::python
