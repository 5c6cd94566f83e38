// See results.h.
#include "python/src/results.h"

#include <pybind11/numpy.h>

#include <optional>
#include <string>

#include "vm/error.h"

namespace dynvm::python {
namespace {

bool overlaps(const BorrowedRange& a, const char* begin, const char* end) {
  return begin < a.end && a.begin < end;
}

}  // namespace

bool ResultConverter::must_copy(const vm::Tensor& t) const {
  if (t.nbytes() == 0) return false;
  if (constants_.count(t.storage().get()) != 0) return true;
  const char* begin = static_cast<const char*>(t.data());
  const char* end = begin + t.nbytes();
  for (const BorrowedRange& r : borrowed_) {
    if (overlaps(r, begin, end)) return true;
  }
  for (const BorrowedRange& r : returned_) {
    if (overlaps(r, begin, end)) return true;
  }
  return false;
}

py::object ResultConverter::tensor(vm::Tensor t) {
  if (t.device().type != vm::DeviceType::kCPU || must_copy(t)) t = t.copy_to(vm::kCpu);
  const char* begin = static_cast<const char*>(t.data());
  returned_.push_back({begin, begin + t.nbytes()});
  std::optional<std::string> descr = vm::to_numpy_descr(t.dtype());
  if (!descr) return py::cast(DLPackTensor{std::move(t)});
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  void* data = t.data();
  py::capsule owner(new vm::Tensor(std::move(t)),
                    [](void* p) { delete static_cast<vm::Tensor*>(p); });
  return py::array(py::dtype(*descr), std::move(shape), data, owner);
}

py::object ResultConverter::convert(const vm::Value& value, const vm::TensorSpec& spec) {
  switch (value.kind()) {
    case vm::ValueKind::kTensor:
      return tensor(value.as_tensor());
    case vm::ValueKind::kInt:
      return tensor(
          vm::Tensor::from_vector(std::vector<int64_t>{value.as_int()}, {}, vm::DType::kInt64));
    case vm::ValueKind::kShape: {
      const vm::Shape& s = value.as_shape();
      return tensor(
          vm::Tensor::from_vector(s, {static_cast<int64_t>(s.size())}, vm::DType::kInt64));
    }
    case vm::ValueKind::kTuple: {
      const vm::Tuple& fields = value.as_tuple();
      const bool optional =
          spec.form == vm::ValueForm::kOptional || spec.form == vm::ValueForm::kOptionalSequence;
      if (optional) {
        if (fields.empty()) return py::none();
        vm::TensorSpec inner = spec;
        inner.form = spec.form == vm::ValueForm::kOptional ? vm::ValueForm::kTensor
                                                           : vm::ValueForm::kSequence;
        return convert(fields[0], inner);
      }
      py::list out;
      for (const vm::Value& f : fields) out.append(convert(f, spec));
      return out;
    }
    case vm::ValueKind::kEmpty:
    case vm::ValueKind::kStorage:
      break;
  }
  user_error("output '", spec.name, "' is ", value.summary(), ", which is not data");
}

py::capsule dlpack_capsule(const vm::Tensor& t) {
  DLManagedTensor* managed = t.to_dlpack();
  // A consumer renames the capsule "used_dltensor" and calls the deleter itself; one that
  // was never consumed still owns the tensor when it dies.
  return py::capsule(managed, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      if (m->deleter != nullptr) m->deleter(m);
    }
  });
}

}  // namespace dynvm::python
