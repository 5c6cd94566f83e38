#include "tools/vmserve/batching.h"

#include <cstring>

#include "vm/error.h"

namespace dynvm::serve {
namespace {

int first_symbolic_axis(const vm::TensorSpec& spec) {
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    if (spec.dims[i].is_symbolic()) return static_cast<int>(i);
  }
  return -1;
}

// Bytes before, inside and after `axis` of a row-major tensor: [outer, axis, inner].
struct Slabs {
  int64_t outer = 1;
  int64_t inner_bytes = 1;
};
Slabs slabs(const vm::Shape& shape, int axis, size_t element_size) {
  Slabs s;
  for (int i = 0; i < axis; ++i) s.outer *= shape[i];
  s.inner_bytes = static_cast<int64_t>(element_size);
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) s.inner_bytes *= shape[i];
  return s;
}

}  // namespace

BatchAxes batch_axes(const vm::Executable& exe, const std::map<std::string, int>& overrides) {
  auto axis_of = [&](const vm::TensorSpec& spec, const char* what) {
    auto it = overrides.find(spec.name);
    int axis = it != overrides.end() ? it->second : first_symbolic_axis(spec);
    if (axis >= static_cast<int>(spec.dims.size()) || axis < -1) {
      user_error(what, " '", spec.name, "' has rank ", spec.dims.size(), ": no axis ", axis);
    }
    return axis;
  };
  for (const auto& [name, axis] : overrides) {
    bool known = false;
    for (const auto* list : {&exe.inputs, &exe.outputs}) {
      for (const vm::TensorSpec& spec : *list) known = known || spec.name == name;
    }
    if (!known) user_error("--batch names '", name, "', which is no input or output of the model");
  }
  BatchAxes axes;
  bool any_input = false;
  for (const vm::TensorSpec& spec : exe.inputs) {
    axes.inputs.push_back(axis_of(spec, "input"));
    any_input = any_input || axes.inputs.back() >= 0;
  }
  if (!any_input) user_error("no input has a symbolic dim to batch along");
  for (const vm::TensorSpec& spec : exe.outputs) {
    axes.outputs.push_back(axis_of(spec, "output"));
    if (axes.outputs.back() < 0) {
      user_error("output '", spec.name, "' has no symbolic dim to split a batch along");
    }
  }
  return axes;
}

std::optional<std::string> batch_key(const BatchAxes& axes, std::span<const vm::Tensor> inputs) {
  constexpr size_t kMaxKeyedBytes = 256;
  std::string key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const vm::Tensor& t = inputs[i];
    key += str_cat(static_cast<int>(t.dtype()), vm::shape_str(t.shape()), ";");
    if (axes.inputs[i] >= 0) continue;
    if (t.nbytes() > kMaxKeyedBytes) return std::nullopt;
    key.append(static_cast<const char*>(t.data()), t.nbytes());
    key += ';';
  }
  return key;
}

int64_t batch_rows(const BatchAxes& axes, std::span<const vm::Tensor> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (axes.inputs[i] >= 0) return inputs[i].dim(axes.inputs[i]);
  }
  return 1;
}

vm::Tensor concat_along(std::span<const vm::Tensor> parts, int axis) {
  DYNVM_INTERNAL_CHECK(!parts.empty(), "concat_along: no parts");
  const vm::Tensor& first = parts[0];
  vm::Shape shape = first.shape();
  shape[axis] *= static_cast<int64_t>(parts.size());
  vm::Tensor out = vm::Tensor::empty(shape, first.dtype());
  const Slabs s = slabs(first.shape(), axis, vm::dtype_size(first.dtype()));
  const int64_t part_bytes = first.dim(axis) * s.inner_bytes;
  if (part_bytes == 0) return out;
  auto* dst = static_cast<char*>(out.data());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (const vm::Tensor& part : parts) {
      std::memcpy(dst, static_cast<const char*>(part.data()) + o * part_bytes, part_bytes);
      dst += part_bytes;
    }
  }
  return out;
}

std::optional<std::vector<vm::Tensor>> split_along(const vm::Tensor& t, int axis, int64_t parts) {
  if (parts <= 0 || axis >= t.ndim() || t.dim(axis) % parts != 0) return std::nullopt;
  vm::Shape shape = t.shape();
  shape[axis] /= parts;
  const Slabs s = slabs(t.shape(), axis, vm::dtype_size(t.dtype()));
  const int64_t part_bytes = shape[axis] * s.inner_bytes;
  std::vector<vm::Tensor> out;
  for (int64_t p = 0; p < parts; ++p) out.push_back(vm::Tensor::empty(shape, t.dtype()));
  if (part_bytes == 0) return out;
  const auto* src = static_cast<const char*>(t.data());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (vm::Tensor& part : out) {
      std::memcpy(static_cast<char*>(part.data()) + o * part_bytes, src, part_bytes);
      src += part_bytes;
    }
  }
  return out;
}

}  // namespace dynvm::serve
