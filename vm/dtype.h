// Element types of tensors: every ONNX numeric type, bool, and float16/bfloat16 as
// storage types. Conversions to and from DLPack, ONNX TensorProto codes, NumPy's
// `descr` strings and the short names used on the command line and in .vmasm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <dlpack/dlpack.h>

namespace dynvm::vm {

// The numeric values are part of the .vmexe format: never renumber, only append.
enum class DType : uint8_t {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kInt8 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kUInt8 = 8,
  kUInt16 = 9,
  kUInt32 = 10,
  kUInt64 = 11,
  kBool = 12,
  kComplex64 = 13,
  kComplex128 = 14,
};
inline constexpr int kNumDTypes = 15;

bool is_valid_dtype(int64_t code);
size_t dtype_size(DType t);
// The short name: "f32", "i64", "bool", ... (also what the .vmasm text uses).
std::string_view dtype_name(DType t);
// The long name, as NumPy and PyTorch spell it: "float32", "int64", "bool", "bfloat16".
std::string_view dtype_long_name(DType t);
// Accepts the short name and the long one ("float32", "int64", "float", "double").
std::optional<DType> parse_dtype(std::string_view name);

DLDataType to_dlpack(DType t);
std::optional<DType> from_dlpack(DLDataType t);

// ONNX TensorProto.DataType codes (FLOAT = 1, ...).
std::optional<DType> from_onnx_code(int code);
int to_onnx_code(DType t);

// NumPy array-protocol type strings, little-endian: "<f4", "|b1", ...
// bfloat16 has no NumPy type and returns nullopt.
std::optional<std::string> to_numpy_descr(DType t);
std::optional<DType> from_numpy_descr(std::string_view descr);

bool is_floating(DType t);
bool is_integer(DType t);  // signed or unsigned, not bool

}  // namespace dynvm::vm
