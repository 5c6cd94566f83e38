// See feeds.h.
#include "python/src/feeds.h"

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>

#include <cstdint>
#include <optional>
#include <string>

#include "vm/error.h"

namespace dynvm::python {
namespace {

// Memory the VM reads but does not own: the owner is in BoundFeeds::owners.
class BorrowedStorage final : public vm::StorageImpl {
 public:
  BorrowedStorage(void* data, size_t nbytes, vm::Device device)
      : StorageImpl(data, nbytes, device) {}
};

const py::module_& numpy() {
  // Leaked on purpose: destroying a Python object at process exit, after the interpreter
  // has finalized, is not allowed.
  static const py::module_* np = new py::module_(py::module_::import("numpy"));
  return *np;
}

bool aligned(const void* p, size_t element) {
  return reinterpret_cast<uintptr_t>(p) % element == 0;
}

vm::Tensor borrow(void* data, size_t nbytes, vm::Device device, vm::Shape shape, vm::DType dtype,
                  py::object owner, BoundFeeds& b) {
  const char* begin = static_cast<const char*>(data);
  b.borrowed.push_back({begin, begin + nbytes});
  b.owners.push_back(std::move(owner));
  return vm::Tensor::from_storage(std::make_shared<BorrowedStorage>(data, nbytes, device), 0,
                                  std::move(shape), dtype);
}

std::string input_names(const vm::Executable& exe) {
  std::string s;
  for (const vm::TensorSpec& spec : exe.inputs) s += (s.empty() ? "" : ", ") + spec.name;
  return s.empty() ? "none" : s;
}

class Binder {
 public:
  Binder(const vm::TensorSpec& spec, BoundFeeds& b) : spec_(spec), b_(b) {}

  vm::Value value(py::handle obj) {
    const bool optional =
        spec_.form == vm::ValueForm::kOptional || spec_.form == vm::ValueForm::kOptionalSequence;
    if (optional && obj.is_none()) return vm::Tuple{};
    vm::Value v = spec_.form == vm::ValueForm::kTensor || spec_.form == vm::ValueForm::kOptional
                      ? vm::Value(tensor(obj))
                      : sequence(obj);
    return optional ? vm::Value(vm::Tuple{std::move(v)}) : v;
  }

 private:
  vm::Value sequence(py::handle obj) {
    if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
      fail("is a sequence: give a list of arrays, not ", type_name(obj));
    }
    vm::Tuple elements;
    for (py::handle e : obj) elements.emplace_back(tensor(e));
    return vm::Value(std::move(elements));
  }

  vm::Tensor tensor(py::handle obj) {
    if (obj.is_none())
      fail("is None, and the model needs a value (", vm::tensor_spec_str(spec_), ")");
    if (py::isinstance<py::array>(obj)) return array(py::reinterpret_borrow<py::array>(obj));
    const bool has_dlpack = py::hasattr(obj, "__dlpack__");
    if (has_dlpack) {
      if (std::optional<vm::Tensor> t = dlpack(obj)) return *t;
    }
    // A tensor that cannot be borrowed (strided, say), read through NumPy; a number or a
    // list, made an array of the input's dtype.
    py::object a;
    try {
      if (has_dlpack) {
        a = numpy().attr("from_dlpack")(obj);
      } else {
        py::object dtype = py::none();
        if (!py::hasattr(obj, "__array__") && spec_.dtype != vm::DType::kBFloat16) {
          dtype = py::str(std::string(vm::dtype_long_name(spec_.dtype)));
        }
        a = numpy().attr("asarray")(obj, dtype);
      }
    } catch (py::error_already_set& e) {
      fail("cannot be made an array: ", e.what());
    }
    return array(py::reinterpret_borrow<py::array>(a), /*copied=*/true);
  }

  vm::Tensor array(py::array a, bool copied = false) {
    std::string descr = py::str(a.dtype().attr("str"));
    std::optional<vm::DType> dtype = vm::from_numpy_descr(descr);
    if (!dtype && descr.size() > 1 && descr[0] == '>') {  // big-endian: copy into native order
      a = py::reinterpret_borrow<py::array>(a.attr("astype")(a.dtype().attr("newbyteorder")("=")));
      dtype = vm::from_numpy_descr(std::string(py::str(a.dtype().attr("str"))));
      copied = true;
    }
    if (!dtype) {
      fail("has NumPy dtype ", std::string(py::str(a.dtype())),
           ", which is not a tensor type (the model takes ", vm::tensor_spec_str(spec_), ")");
    }
    const size_t element = vm::dtype_size(*dtype);
    if ((a.flags() & py::array::c_style) == 0 || !aligned(a.data(), element)) {
      // A copy in C order, in memory NumPy allocates (aligned for every dtype).
      a = py::reinterpret_borrow<py::array>(a.attr("copy")());
      copied = true;
    }
    if (copied) ++b_.copies;
    vm::Shape shape(a.shape(), a.shape() + a.ndim());
    void* data = const_cast<void*>(a.data());
    const size_t nbytes = static_cast<size_t>(a.nbytes());
    return borrow(data, nbytes, vm::kCpu, std::move(shape), *dtype, std::move(a), b_);
  }

  // A `__dlpack__` producer's tensor, borrowed when it is on the CPU, contiguous and
  // aligned; nullopt when it has to be copied.
  std::optional<vm::Tensor> dlpack(py::handle obj) {
    py::object capsule;
    try {
      capsule = obj.attr("__dlpack__")();
    } catch (py::error_already_set& e) {
      fail("__dlpack__ failed: ", e.what());
    }
    if (!PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
      fail("__dlpack__ did not return a DLPack capsule");
    }
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    const DLTensor& t = managed->dl_tensor;
    std::optional<vm::DType> dtype = vm::from_dlpack(t.dtype);
    // The capsule keeps its name, so its destructor releases the producer's tensor.
    if (!dtype || t.device.device_type != kDLCPU || t.ndim < 0) return std::nullopt;
    vm::Shape shape(t.shape, t.shape + t.ndim);
    if (t.strides != nullptr) {
      int64_t expected = 1;
      for (int i = t.ndim - 1; i >= 0; --i) {
        if (shape[i] != 1 && t.strides[i] != expected) return std::nullopt;
        expected *= shape[i];
      }
    }
    void* data = static_cast<char*>(t.data) + t.byte_offset;
    const size_t element = vm::dtype_size(*dtype);
    if (!aligned(data, element)) return std::nullopt;
    const size_t nbytes = static_cast<size_t>(vm::shape_numel(shape)) * element;
    return borrow(data, nbytes, vm::kCpu, std::move(shape), *dtype, std::move(capsule), b_);
  }

  static std::string type_name(py::handle obj) {
    return py::str(py::type::handle_of(obj).attr("__name__"));
  }

  template <typename... Args>
  [[noreturn]] void fail(Args&&... args) {
    user_error("input '", spec_.name, "' ", std::forward<Args>(args)...);
  }

  const vm::TensorSpec& spec_;
  BoundFeeds& b_;
};

}  // namespace

BoundFeeds bind_feeds(const vm::Executable& exe, py::handle feeds) {
  const std::vector<vm::TensorSpec>& specs = exe.inputs;
  std::vector<py::handle> given(specs.size());
  if (py::isinstance<py::list>(feeds) || py::isinstance<py::tuple>(feeds)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(feeds);
    if (seq.size() != specs.size()) {
      user_error("the model takes ", specs.size(), " input", specs.size() == 1 ? "" : "s", " (",
                 input_names(exe), "), and ", seq.size(), " were given");
    }
    for (size_t i = 0; i < specs.size(); ++i) given[i] = seq[i];
  } else if (PyMapping_Check(feeds.ptr()) != 0 && !py::isinstance<py::str>(feeds)) {
    py::dict d = py::dict(py::reinterpret_borrow<py::object>(feeds));
    for (auto [key, value] : d) {
      if (!py::isinstance<py::str>(key)) {
        user_error("input names are strings; got ", std::string(py::repr(key)));
      }
      const std::string name = py::str(key);
      size_t i = 0;
      while (i < specs.size() && specs[i].name != name) ++i;
      if (i == specs.size()) {
        user_error("unknown input '", name, "'; the model's inputs are: ", input_names(exe));
      }
      given[i] = value;
    }
  } else {
    user_error("inputs are a dict of name to array or a list in the model's order, not ",
               std::string(py::str(py::type::handle_of(feeds).attr("__name__"))));
  }
  BoundFeeds b;
  b.values.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!given[i]) {
      user_error("missing input '", specs[i].name, "' (", vm::tensor_spec_str(specs[i]), ")");
    }
    b.values.push_back(Binder(specs[i], b).value(given[i]));
  }
  return b;
}

}  // namespace dynvm::python
