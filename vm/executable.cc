#include "vm/executable.h"

#include <cstring>

#include "vm/error.h"

namespace dynvm::vm {

std::string tensor_spec_str(const TensorSpec& spec) {
  // Also used on unverified executables (vmrun --info): a bad dtype prints, not crashes.
  std::string dtype = is_valid_dtype(static_cast<int64_t>(spec.dtype))
                          ? std::string(dtype_name(spec.dtype))
                          : str_cat("?dtype(", static_cast<int>(spec.dtype), ")");
  std::string s = str_cat(spec.name, ": ");
  if (spec.form != ValueForm::kTensor) s += str_cat(value_form_name(spec.form), " of ");
  s += dtype;
  if (spec.any_rank) return s + " [?rank]";
  s += " [";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    const DimSpec& d = spec.dims[i];
    if (i) s += ", ";
    if (!d.is_symbolic()) {
      s += std::to_string(d.value);
      continue;
    }
    s += d.symbol;
    bool has_min = d.min > 0;
    bool has_max = d.max != std::numeric_limits<int64_t>::max();
    if (has_min || has_max) {
      s += str_cat(":", d.min, "..");
      if (has_max) s += std::to_string(d.max);
    }
  }
  return s + "]";
}

const char* value_form_name(ValueForm f) {
  switch (f) {
    case ValueForm::kTensor:
      return "tensor";
    case ValueForm::kSequence:
      return "sequence";
    case ValueForm::kOptional:
      return "optional";
    case ValueForm::kOptionalSequence:
      return "optional sequence";
  }
  return "?form";
}

int64_t Executable::find_function(std::string_view name) const {
  for (size_t i = 0; i < functions.size(); ++i) {
    if (functions[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

bool executables_equal(const Executable& a, const Executable& b, std::string* why) {
  auto differ = [&](const std::string& what) {
    if (why != nullptr) *why = what;
    return false;
  };
  if (a.target != b.target) return differ("target");
  if (a.producer != b.producer) return differ("producer");
  if (a.entry != b.entry) return differ("entry");
  if (a.functions.size() != b.functions.size()) return differ("function count");
  for (size_t i = 0; i < a.functions.size(); ++i) {
    if (!(a.functions[i] == b.functions[i])) return differ(str_cat("function ", i));
  }
  if (a.strings != b.strings) return differ("strings");
  if (a.kernels != b.kernels) return differ("kernels");
  if (a.libraries != b.libraries) return differ("libraries");
  if (a.inputs != b.inputs) return differ("inputs");
  if (a.outputs != b.outputs) return differ("outputs");
  if (a.constants.size() != b.constants.size()) return differ("constant count");
  for (size_t i = 0; i < a.constants.size(); ++i) {
    const Tensor& x = a.constants[i];
    const Tensor& y = b.constants[i];
    if (x.dtype() != y.dtype() || x.shape() != y.shape() ||
        std::memcmp(x.data(), y.data(), x.nbytes()) != 0) {
      return differ(str_cat("constant ", i));
    }
  }
  return true;
}

}  // namespace dynvm::vm
