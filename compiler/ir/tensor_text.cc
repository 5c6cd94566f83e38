// Constant tensors as text (see tensor_text.h).
#include "compiler/ir/tensor_text.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "compiler/ir/type.h"

namespace dynvm::compiler {
namespace {

std::string number(double v, const char* format) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Element i of a constant as text; nullopt for dtypes printed as raw bytes.
std::string element(const vm::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case vm::DType::kFloat32:
      return number(t.data_as<float>()[i], "%.9g");
    case vm::DType::kFloat64:
      return number(t.data_as<double>()[i], "%.17g");
    case vm::DType::kInt8:
      return std::to_string(t.data_as<int8_t>()[i]);
    case vm::DType::kInt16:
      return std::to_string(t.data_as<int16_t>()[i]);
    case vm::DType::kInt32:
      return std::to_string(t.data_as<int32_t>()[i]);
    case vm::DType::kInt64:
      return std::to_string(t.data_as<int64_t>()[i]);
    case vm::DType::kUInt8:
      return std::to_string(t.data_as<uint8_t>()[i]);
    case vm::DType::kUInt16:
      return std::to_string(t.data_as<uint16_t>()[i]);
    case vm::DType::kUInt32:
      return std::to_string(t.data_as<uint32_t>()[i]);
    case vm::DType::kUInt64:
      return std::to_string(t.data_as<uint64_t>()[i]);
    case vm::DType::kBool:
      return t.data_as<uint8_t>()[i] ? "true" : "false";
    default:
      return "";
  }
}

bool printed_as_numbers(vm::DType t) {
  switch (t) {
    case vm::DType::kFloat16:
    case vm::DType::kBFloat16:
    case vm::DType::kComplex64:
    case vm::DType::kComplex128:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::string tensor_text(const vm::Tensor& t, size_t max_elements) {
  std::ostringstream os;
  std::vector<Dim> dims;
  for (int64_t d : t.shape()) dims.emplace_back(d);
  os << "const(" << to_string(tensor_type(t.dtype(), dims)) << ", ";
  const int64_t n = t.numel();
  if (static_cast<size_t>(n) > max_elements) {
    os << "..." << n << " values)";
    return os.str();
  }
  if (!printed_as_numbers(t.dtype())) {
    static const char* const kHex = "0123456789abcdef";
    os << "hex\"";
    const auto* bytes = static_cast<const uint8_t*>(t.data());
    for (size_t i = 0; i < t.nbytes(); ++i) os << kHex[bytes[i] >> 4] << kHex[bytes[i] & 15];
    os << "\")";
    return os.str();
  }
  os << "[";
  for (int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << element(t, i);
  os << "])";
  return os.str();
}

}  // namespace dynvm::compiler
